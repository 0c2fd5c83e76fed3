// Package views holds the dashboard's templ components and the view-model
// structs they render. It imports templ and the standard library only.
package views
