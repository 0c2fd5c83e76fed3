package views

import "testing"

// The audit actions of owners and notes have words in both languages, on
// the audit log and in a task's history.
func TestOwnerActionsTranslated(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"take", "hand_over", "let_go", "note"} {
		for _, lang := range []Lang{LangZH, LangEN} {
			p := Page{Lang: lang}
			if got := auditAction(p, a); got == a && lang == LangZH {
				t.Errorf("action %s has no Chinese name", a)
			}
			if got := p.T("tasks.act." + a + ".ok"); got[0] == "⟦"[0] {
				t.Errorf("task history of %s has no words: %s", a, got)
			}
		}
	}
}
