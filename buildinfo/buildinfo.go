// Package buildinfo says what an unhold binary is: its module version,
// the commit it was built from, when, with which Go, and the schema
// version it carries. "unhold version" prints it and /healthz serves it.
package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Info is one binary's facts. Empty strings are facts the build did not
// record (a build outside a git checkout has no commit; one without the
// Makefile's -ldflags no build time).
type Info struct {
	Version   string `json:"version"`    // module version, "(devel)" for a build from a checkout
	Commit    string `json:"commit"`     // vcs.revision
	Modified  bool   `json:"modified"`   // the checkout had uncommitted changes
	BuildTime string `json:"build_time"` // set by -ldflags -X main.buildTime=...
	GoVersion string `json:"go_version"`
	// Schema is the highest migration the binary carries.
	Schema int64 `json:"schema"`
	// DBSchema is a database's schema version, when one was asked about.
	DBSchema *int64 `json:"db_schema,omitempty"`
}

// Read is this binary's Info, with the build time the linker set and the
// binary's schema version.
func Read(buildTime string, schema int64) Info {
	in := Info{BuildTime: buildTime, GoVersion: runtime.Version(), Schema: schema}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// WriteText writes in as "key: value" lines, for people.
func (in Info) WriteText(w io.Writer) error {
	or := func(s, none string) string {
		if s == "" {
			return none
		}
		return s
	}
	commit := or(in.Commit, "unknown (not stamped: built outside a git clone, or with -buildvcs=false)")
	if in.Modified {
		commit += " (with uncommitted changes)"
	}
	_, err := fmt.Fprintf(w, "version:    %s\ncommit:     %s\nbuilt:      %s\ngo:         %s\nschema:     %d (the highest migration this binary carries)\n",
		or(in.Version, "unknown"), commit, or(in.BuildTime, "unknown (not built by make build)"), in.GoVersion, in.Schema)
	if err == nil && in.DBSchema != nil {
		_, err = fmt.Fprintf(w, "db schema:  %d\n", *in.DBSchema)
	}
	return err
}
