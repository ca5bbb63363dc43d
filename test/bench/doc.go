// Package bench is the performance harness behind `make bench`.
//
// Every target of the harness is a ratio between two figures measured in the
// same run, because absolute times on small, shared machines are noisy:
//
//   - BenchmarkClient: our MCP client against the official go-sdk client,
//     the mcp-go client and a floor (plain net/http + encoding/json, no
//     validation) making the same HTTP exchanges as ours, all against one
//     in-process go-sdk server.
//   - BenchmarkDecode: a 2 MiB event-stream tools/list page through our
//     client against a plain json.Unmarshal of the same JSON into the same
//     types.
//   - BenchmarkScaleImport, BenchmarkScaleProbe: the real manager
//     (internal/manager) in this process against envtest. They skip without
//     KUBEBUILDER_ASSETS and run only under -bench, so `make test` never
//     starts them.
//   - BenchmarkScaleCache: the manager binary with the controllers only, as
//     its own process against envtest, with 1,000 McpServers and 10,000
//     McpTools cached: its resident set and live heap, apart from the MCP
//     servers and the client, which stay in this process.
//   - BenchmarkScaleFleet: 5,000 McpServers at a 30 s interval across three
//     controller shards, each the manager binary as its own process, against
//     one envtest: probes on time per shard, status writes per unchanged
//     probe, each shard's memory, and the CPU of kube-apiserver and etcd.
//   - BenchmarkGateway: one client calling a tool directly and through the
//     gateway, the manager binary run as its own process on CPUs of its own
//     (envtest behind it, reviews cached), at 1 and 64 concurrent agents:
//     the latency the gateway adds, the share of the direct throughput it
//     keeps and the CPU per call on each side; and again in the initialize
//     era (go-sdk client sessions pinned to 2025-11-25). It skips without
//     KUBEBUILDER_ASSETS, without two CPUs or without taskset.
//   - BenchmarkGatewayList: what a tools/list allocates over the bytes it
//     serves, and its CPU, in both eras, in namespaces of 1,000 and 10,000
//     tools (a gateway in this process).
//   - BenchmarkGatewayCost: what a call and a ping (2026-07-28: its
//     server/discover) allocate and cost against the caller's catalog, 10
//     to 10,000 tools, in both eras (a gateway in this process, the
//     upstream in another); the report draws it as an SVG.
//   - BenchmarkGatewayFlood: one namespace's TypeScript agent listing a
//     9 MiB catalog on 16 connections beside another's calling once a
//     second, through the gateway process run as the chart runs it: the
//     quiet agent's latency alone and during the flood, its failures, and
//     the gateway's peak resident set. It also skips without Node.js.
//   - BenchmarkGatewaySessions: what 10,000 idle sessions cost the gateway
//     process, over shared connections and each on its own.
//   - BenchmarkArgumentRules: the gateway's rules stage on one call of a
//     tool with five CEL rules and a fixed argument, against a tool without
//     rules, and compiling the five. Its target is absolute (≤ 20 µs per
//     call), as issue #21 states it: the stage runs in the gateway's own
//     process, so no peer does the same work to compare against.
//   - BenchmarkOAuthIdentify: the gateway's identify stage on a request at
//     a namespace's endpoint with a person's access token it validated
//     before, against a real OpenID Provider (test/oidcprovider): the CPU
//     per request, absolute as issue #33 states it (≤ 20 µs), and the
//     requests the provider received after the first (none).
//   - BenchmarkSoak: SOAK_DURATION (an hour by default) of flapping
//     upstreams, churning catalogs, agents of both eras calling through two
//     gateway replicas and a person approving calls, with every process's
//     resident set, heap and goroutines sampled and judged for a slope, and
//     error counters per bucket judged for a spike (soakstat). Only `make
//     soak` runs it; it writes its samples to SOAK_RESULTS for the report.
//
// Figures that are not times are reported with b.ReportMetric; the report
// program (./report) reads the benchmark output and writes
// docs/benchmarks.md, so no figure in that file is typed by hand.
package bench
