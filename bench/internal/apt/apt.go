// Package apt names the Debian archive the lab's base image is built
// from. It is a setting only, with no Docker code, so that the settings
// and the summary side (engine, labreport) read it without linking the
// image builder.
package apt

import (
	"cmp"
	"os"
	"strings"
)

// Archive is the Debian archive the base image is built from. The zero
// value is the host's own apt sources (a Debian host); a host that is not
// Debian (a stock CI runner) names a mirror, and bookworm-security comes
// from Security, DefaultSecurity when empty. The image's tag is the
// recipe's hash either way: the same recipe from another mirror of the
// same archive installs the same packages, at the versions the archive
// holds at the time of the build.
type Archive struct {
	Mirror, Security string
}

// The archives a mirror setting usually names.
const (
	DefaultMirror   = "http://deb.debian.org/debian"
	DefaultSecurity = "http://deb.debian.org/debian-security"
)

// Env is the build script's environment for a: none for the host's own
// sources.
func (a Archive) Env() []string {
	if a.Mirror == "" {
		return nil
	}
	return []string{"LAB_DEBIAN_MIRROR=" + a.Mirror, "LAB_DEBIAN_SECURITY=" + cmp.Or(a.Security, DefaultSecurity)}
}

// HostSources is where a Debian host keeps its deb822 apt sources.
const HostSources = "/etc/apt/sources.list.d/debian.sources"

// FromSources is the archive a deb822 sources file names: its first URIs
// as the mirror, one of a security suite as the security archive; the
// zero Archive when the file is missing or names none.
func FromSources(path string) Archive {
	b, err := os.ReadFile(path)
	if err != nil {
		return Archive{}
	}
	var a Archive
	var uri string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "URIs:":
			uri = f[1]
		case len(f) >= 2 && f[0] == "Suites:" && strings.HasSuffix(f[1], "-security"):
			a.Security = uri
		case len(f) >= 2 && f[0] == "Suites:" && a.Mirror == "":
			a.Mirror = uri
		}
	}
	return a
}
