// Package browsertest drives a real headless Chromium for the tests that
// use the dashboard as a person does (web's and cmd/unhold's browser tests).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Chromium finds the system's Chromium; under CI its absence fails the test
// (.ci/run installs Debian's chromium).
func Chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests start Chromium and take tens of seconds")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium on PATH under CI: .ci/run should have installed it")
	}
	t.Skip("no Chromium on PATH")
	return ""
}

// Browser is a headless Chromium for one test: its context, bounded to
// 300 s (the screenshots take minutes under -race on a loaded machine),
// accepts every confirmation dialog and records every
// Content-Security-Policy violation, across navigations.
type Browser struct {
	t *testing.T
	// Ctx is the browser's context, for chromedp.Run.
	Ctx context.Context
}

func Start(t *testing.T, bin string, width, height int) *Browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	bctx, cancel = context.WithTimeout(bctx, 300*time.Second)
	t.Cleanup(cancel)
	// The rerun button asks for confirmation; accept it like an operator.
	dialogs := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	_, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `document.addEventListener("securitypolicyviolation", function (e) {
			sessionStorage.setItem("csp", (sessionStorage.getItem("csp") || "") + location.pathname + ": " +
				e.violatedDirective + " " + e.blockedURI + "\n");
		});`,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Browser{t: t, Ctx: bctx}
}

// Do runs steps one by one, each within 15 s, and stops the test at the
// first that fails, saying on which page.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for i, step := range steps {
		sctx, cancel := context.WithTimeout(b.Ctx, 15*time.Second)
		_, err := chromedp.Run(sctx, step)
		cancel()
		if err != nil {
			url, _ := chromedp.Run(b.Ctx, chromedp.Location())
			b.t.Fatalf("step %d of %d failed on %s: %v", i+1, len(steps), url, err)
		}
	}
}

// Text is the text of the first element sel selects.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// Eval runs a page script that returns a string.
func (b *Browser) Eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// ClickToPage clicks sel, which opens a page (a link, a form's button),
// and waits for the new page, not the old one the click leaves, to load.
func (b *Browser) ClickToPage(sel string) {
	b.t.Helper()
	b.Eval(`window.unholdOldPage = true; ""`)
	b.Do(chromedp.Click(chromedp.CSS(sel)))
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](
			`window.unholdOldPage || document.readyState !== "complete" || !document.querySelector("main") ? "old" : "new"`))
		if err == nil && v == "new" {
			return
		}
		if time.Now().After(deadline) {
			url, _ := chromedp.Run(b.Ctx, chromedp.Location())
			b.t.Fatalf("a click on %s opened no page (still on %s)", sel, url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CSPViolations lists the Content-Security-Policy violations seen so far,
// one per line, across navigations.
func (b *Browser) CSPViolations() string {
	b.t.Helper()
	return b.Eval(`sessionStorage.getItem("csp") || ""`)
}

// Fill types v into the field sel as a page script would. SendKeys
// resolves a DOM node id first, and chromedp now and then loses that id
// to a late DOM update on a loaded machine ("Could not find node with
// given id"); a script looks the field up when it runs.
func Fill(sel, v string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(function () {
		var e = document.querySelector(%q);
		if (!e) return false;
		e.focus();
		e.value = %q;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		return true;
	})()`, sel, v)
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		ok, err := chromedp.Evaluate[bool](js)(ctx, tg)
		if err == nil && !ok {
			err = fmt.Errorf("no %s to fill", sel)
		}
		return chromedp.Void{}, err
	}
}
