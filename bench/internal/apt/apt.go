// Package apt names the Debian archive the lab's base image is built
// from. It is a setting only, with no Docker code, so that the settings
// and the summary side (engine, labreport) read it without linking the
// image builder.
package apt

import "cmp"

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
