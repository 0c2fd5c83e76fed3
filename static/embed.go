// Package static holds the dashboard's CSS and scripts, embedded in the
// binary so nothing is fetched from outside at run time.
package static

import "embed"

// FS is the embedded static files.
//
//go:embed *.css *.js
var FS embed.FS
