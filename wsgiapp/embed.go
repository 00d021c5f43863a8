// Package wsgiapp embeds the Python WSGI apps served in the lab's containers,
// so the image layer that carries them is built from the same bytes the
// harness hashes.
package wsgiapp

import "embed"

// Files are the app sources (and mod_wsgi's Apache configuration,
// modwsgi.conf), copied to /srv/wsgiapp in the lab image.
//
//go:embed *.py *.conf
var Files embed.FS

// Dir is where Files land inside the image.
const Dir = "/srv/wsgiapp"
