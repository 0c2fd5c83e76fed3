package models

import "fmt"

// ReleaseState is where the release of what an order held stands, read
// from its release tasks and its hold rows. The first rule that applies
// decides, so an order with one MANUAL task and one DONE task is MANUAL:
//
//   - MANUAL: one of its tasks is MANUAL (ops must act);
//   - RETRY: none is MANUAL, one is RETRY (a try failed, another will come);
//   - RELEASING: none is MANUAL or RETRY, one is PENDING (written by the
//     close, waiting for or in its first try, or made due by a rerun);
//   - HOLDING: no task is unfinished, and a hold still holds something
//     (qty > released + deducted): a PENDING order's holds, or a hold the
//     tasks left held, which reconciliation flags;
//   - RELEASED: nothing is held any more and something was given back
//     (a hold with released, refunded or restocked > 0): released before
//     payment, refunded after it, or restocked from a return;
//   - NONE: nothing is held and nothing was given back: the order held
//     nothing, or paid for all of it (deducted), a late payment included.
//
// A task counts whatever it does (a paid remote hold's DEDUCT too): its
// status says whether someone has to look.
type ReleaseState string

// Release states, in the order the rules above try them.
const (
	ReleaseManual    ReleaseState = "MANUAL"
	ReleaseRetry     ReleaseState = "RETRY"
	ReleaseReleasing ReleaseState = "RELEASING"
	ReleaseHolding   ReleaseState = "HOLDING"
	ReleaseReleased  ReleaseState = "RELEASED"
	ReleaseNone      ReleaseState = "NONE"
)

// ReleaseStates lists every release state, as the orders list offers them.
var ReleaseStates = []ReleaseState{ReleaseManual, ReleaseRetry, ReleaseReleasing, ReleaseHolding, ReleaseReleased, ReleaseNone}

// ParseReleaseState accepts a release state as ReleaseStates spells it.
func ParseReleaseState(s string) (ReleaseState, error) {
	for _, st := range ReleaseStates {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: release state %q: use MANUAL, RETRY, RELEASING, HOLDING, RELEASED or NONE", ErrInvalid, s)
}

// taskStatus is the task status that puts an order in state st, "" for
// the states read from the holds.
func (st ReleaseState) taskStatus() TaskStatus {
	switch st {
	case ReleaseManual:
		return TaskManual
	case ReleaseRetry:
		return TaskRetry
	case ReleaseReleasing:
		return TaskPending
	}
	return ""
}

// releaseStateSQL is the release state of the order whose number is the
// SQL expression no, as ReleaseState's rules define it: the worst of its
// tasks' statuses, else what its holds still hold or gave back. Each of
// the two reads names the order alone, so both engines read it through the
// unique (order_no, resource_type, biz_key) index of release_tasks and of
// order_holds: the order's few rows, whatever the size of the tables (an
// EXISTS per status instead went through the status index, every task of
// that status for each order).
func releaseStateSQL(no string) string {
	return releaseStateCase(
		`(SELECT MAX(`+taskRankSQL("rt")+`) FROM release_tasks rt WHERE rt.order_no = `+no+`)`,
		`(SELECT MAX(`+holdRankSQL("oh")+`) FROM order_holds oh WHERE oh.order_no = `+no+`)`)
}

// holdStateSQL is the release state of one hold, the order_holds row h,
// by the same rules read for it alone: its task t's status (t the
// release_tasks row of the same order, type and key, NULL when none was
// written), else what h still holds or gave back. An order's state is the
// worst of its holds' (ReleaseStates lists the worst first), since each
// task has its hold.
func holdStateSQL(h, t string) string { return releaseStateCase(taskRankSQL(t), holdRankSQL(h)) }

// releaseStateCase is ReleaseState's rules as SQL over two ranks: task,
// the worst task status (taskRankSQL), and hold, what the holds do
// (holdRankSQL). A NULL rank, no task or no hold, counts as 0.
func releaseStateCase(task, hold string) string {
	return `CASE ` + task + ` WHEN 3 THEN 'MANUAL' WHEN 2 THEN 'RETRY' WHEN 1 THEN 'RELEASING'
		ELSE CASE ` + hold + ` WHEN 2 THEN 'HOLDING' WHEN 1 THEN 'RELEASED' ELSE 'NONE' END END`
}

// taskRankSQL ranks the status of the release task t: 3 MANUAL, 2 RETRY,
// 1 PENDING, 0 finished (or no task).
func taskRankSQL(t string) string {
	return `CASE ` + t + `.status WHEN 'MANUAL' THEN 3 WHEN 'RETRY' THEN 2 WHEN 'PENDING' THEN 1 ELSE 0 END`
}

// holdRankSQL ranks what the hold h does: 2 it still holds something
// (qty > released + deducted), 1 it gave something back (released,
// refunded or restocked), 0 neither.
func holdRankSQL(h string) string {
	return `CASE WHEN ` + h + `.qty > ` + h + `.released + ` + h + `.deducted THEN 2 WHEN ` +
		h + `.released + ` + h + `.refunded + ` + h + `.restocked > 0 THEN 1 ELSE 0 END`
}
