-- +goose Up
-- A claim takes the due tasks without a lease, oldest next_at first
-- (ClaimTasks). On (status, next_at) it read every due task, looked each
-- one's lease up in the table and sorted them all to keep the first
-- batch: a backlog of N tasks cost N a claim, and draining it N²/batch.
-- This index holds only the claimable tasks, in claim order, with the id
-- that breaks ties: a claim reads its batch and stops. A query uses it
-- only when its WHERE repeats the condition.
CREATE INDEX release_tasks_claimable ON release_tasks (next_at, id)
    WHERE status IN ('PENDING','RETRY') AND lease_until IS NULL;

-- +goose Down
DROP INDEX release_tasks_claimable;
