package chart

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The chart's appVersion is the operator release it installs (the image tag
// defaults to it): a plain X.Y.Z, which `make chart-app-version` sets from the
// release tag vX.Y.Z. On a commit that carries such a tag, the two agree.
func TestChartAppVersionFollowsReleaseTag(t *testing.T) {
	av := chartMeta(t).AppVersion
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(av) {
		t.Fatalf("appVersion %q is not X.Y.Z", av)
	}
	out, err := exec.Command("git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*", "HEAD").Output()
	if err != nil {
		// Not a tagged commit (or not a checkout): only the format applies.
		return
	}
	tag := strings.TrimSpace(string(out))
	if regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(tag) && "v"+av != tag {
		t.Fatalf("HEAD is release %s but Chart.yaml appVersion is %q; run make chart-app-version VERSION=%s", tag, av, tag)
	}
}
