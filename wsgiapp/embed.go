// Package wsgiapp embeds the Python WSGI apps served in the lab's containers,
// so the image layer that carries them is built from the same bytes the
// harness hashes.
package wsgiapp

import "embed"

// Files are the app sources, copied to /srv/wsgiapp in the lab image.
//
//go:embed *.py
var Files embed.FS

// Dir is where Files land inside the image.
const Dir = "/srv/wsgiapp"
