package mcp

import "testing"

// A tool's execution.taskSupport is kept when it is one of the three
// values; anything else reads as none (forbidden), and never keeps the
// tool from being imported.
func TestTaskSupportKept(t *testing.T) {
	const in = `"name":"a","inputSchema":{"type":"object"}`
	for def, want := range map[string]string{
		`{` + in + `}`: "",
		`{` + in + `,"execution":{"taskSupport":"required"}}`:                           "required",
		`{` + in + `,"execution":{"taskSupport":"optional"}}`:                           "optional",
		`{` + in + `,"execution":{"taskSupport":"forbidden"}}`:                          "forbidden",
		`{` + in + `,"execution":{"taskSupport":"always"}}`:                             "",
		`{` + in + `,"execution":{"taskSupport":true}}`:                                 "",
		`{` + in + `,"execution":"required"}`:                                           "",
		`{` + in + `,"execution":{"taskSupport":"required","taskSupport":"forbidden"}}`: "",
	} {
		tool, reason := validateTool(t, def)
		if reason != "" || tool.TaskSupport != want {
			t.Errorf("%s: taskSupport %q (skipped: %q), want %q", def, tool.TaskSupport, reason, want)
		}
	}
}
