package controller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("A server that announces changes of its tools", func() {
	const (
		debounce    = 300 * time.Millisecond
		minInterval = 2 * time.Second
	)
	BeforeEach(func() {
		restartManager(func(o *manager.Options) {
			o.ToolListeners = manager.ToolListenerOptions{Enabled: true, Debounce: debounce, MinInterval: minInterval}
		})
	})

	// listening waits until the controllers have a stream open to up that
	// up acknowledged, which it does once it registered the subscription.
	listening := func(up *mcpserver.Server) {
		GinkgoHelper()
		Eventually(func() int { return up.Stats().Listening }, bound(10*time.Second)).Should(BeNumerically(">", 0))
	}

	It("is imported within seconds of a change, while its import interval is an hour", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "drifty", up.URL)
		srv := waitReady(ns, "drifty", bound(30*time.Second))
		Expect(srv.Spec.Import.Interval.Duration).To(Equal(time.Hour), "the default interval")
		listening(up)

		Expect(up.SetToolDescription(mcpserver.ToolEcho, "Echo, changed on the server.")).To(Succeed())
		echo := toolObjectName("drifty", mcpserver.ToolEcho)
		Eventually(func() string { return getTool(ns, echo).Status.Description }, bound(15*time.Second)).
			Should(Equal("Echo, changed on the server."))

		// A disabled tool the server stopped offering is removed.
		up.RemoveTools(mcpserver.ToolFail)
		Eventually(func() map[string]mcpv1alpha1.McpTool { return listTools(ns) }, bound(15*time.Second)).
			ShouldNot(HaveKey(toolObjectName("drifty", mcpserver.ToolFail)))
	})

	It("cannot cause an import storm by announcing a hundred changes", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		createServer(ns, "chatty", up.URL)
		waitReady(ns, "chatty", bound(30*time.Second))
		listening(up)
		before := up.Stats().Methods["tools/list"]

		// A hundred changes, each announced on its own (go-sdk folds
		// changes less than 10ms apart into one notification, so each
		// waits for its own), over a second or more: debouncing alone
		// would import every 300ms, and without it every notification
		// would import.
		start := time.Now()
		for i := range 100 {
			sent := up.Stats().ListChangedSent
			up.AddTools(fmt.Sprintf("chatter_%03d", i))
			_, announced := up.Await(5*time.Second, func(s mcpserver.Stats) bool { return s.ListChangedSent > sent })
			Expect(announced).To(BeTrue(), "change %d was not announced", i)
		}
		// On a busy machine the burst can outlast the minimum interval; the
		// bound is one import per minimum interval of it, plus the one
		// after it.
		most := int(time.Since(start)/minInterval) + 2
		// Every change is imported...
		Eventually(func() int { return len(listTools(ns)) }, bound(15*time.Second)).Should(BeNumerically(">=", 105))
		// ...by a bounded number of imports: at most one per minimum
		// interval, and nothing once the server is quiet. (Debouncing
		// alone would import about every 300ms of the burst.)
		Consistently(func() int { return up.Stats().Methods["tools/list"] - before }, minInterval+2*settle).
			Should(BeNumerically("<=", most))
	})
})
