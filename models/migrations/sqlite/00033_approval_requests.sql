-- +goose Up
-- A rerun or abandon of a task that moves money (balance, points, a type
-- declared with approval: true) is first a request that another person
-- approves or rejects. The task_* columns are the task as the requester
-- saw it: an approval acts only while the task is still that, so a task
-- the worker or another path changed meanwhile is never acted on twice.
-- A request reads as EXPIRED once expires_at has passed, whatever its
-- row still says; the next request for the task closes the row.
CREATE TABLE approval_requests (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         INTEGER NOT NULL REFERENCES release_tasks (id),
    order_no        TEXT    NOT NULL,
    resource_type   TEXT    NOT NULL,
    biz_key         TEXT    NOT NULL,
    action          TEXT    NOT NULL CHECK (action IN ('rerun','abandon')),
    amount          INTEGER NOT NULL,
    reason          TEXT    NOT NULL,
    requested_by    TEXT    NOT NULL,
    requested_at    DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('PENDING','APPROVED','REJECTED','EXPIRED','STALE')),
    task_status     TEXT    NOT NULL,
    task_attempts   INTEGER NOT NULL,
    task_failures   INTEGER NOT NULL,
    task_updated_at DATETIME NOT NULL,
    decided_by      TEXT    NOT NULL DEFAULT '',
    decided_at      DATETIME,
    decision_reason TEXT    NOT NULL DEFAULT ''
);
-- One open request per task and action: a second click finds the first.
CREATE UNIQUE INDEX approval_requests_open ON approval_requests (task_id, action) WHERE status = 'PENDING';
-- The list: pending first, newest first, and the pending count.
CREATE INDEX approval_requests_status ON approval_requests (status, id);

-- +goose Down
DROP TABLE approval_requests;
