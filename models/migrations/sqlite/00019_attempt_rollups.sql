-- +goose Up
-- The overview reads its counts and its close→released latency from these
-- per-minute sums, which the release transactions keep up to date as they
-- write the attempts (models/rollup.go): reading them costs the window's
-- minutes, not its attempts. A minute is its start in Unix seconds, so
-- both engines and the writers' upserts agree on the key exactly.
CREATE TABLE attempt_minutes (
    minute        INTEGER NOT NULL,
    outcome       TEXT    NOT NULL,
    resource_type TEXT    NOT NULL,
    error_class   TEXT    NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (minute, outcome, resource_type, error_class)
);
-- The tasks released in a minute (by done_at) that LatencyStart counts, by
-- LatencyBuckets index: how many, and their least and greatest latency in
-- whole milliseconds (below zero, two instances' clocks apart, is zero).
CREATE TABLE latency_minutes (
    minute INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    min_ms INTEGER NOT NULL,
    max_ms INTEGER NOT NULL,
    PRIMARY KEY (minute, bucket)
);
-- An upgraded database's overview is right at once: the sums of the 26
-- hours (models.RollupRetention, what the cleanup keeps) up to the newest
-- row, which on a live database is now. The bucket bounds are
-- LatencyBuckets' in milliseconds.
INSERT INTO attempt_minutes (minute, outcome, resource_type, error_class, n)
SELECT CAST(strftime('%s', finished_at) AS INTEGER) / 60 * 60 AS m, outcome, resource_type, error_class, COUNT(*)
FROM task_attempts WHERE finished_at >= (SELECT strftime('%Y-%m-%d %H:%M:%S', MAX(finished_at), '-26 hours') FROM task_attempts)
GROUP BY m, outcome, resource_type, error_class;
INSERT INTO latency_minutes (minute, bucket, n, min_ms, max_ms)
SELECT m, CASE WHEN ms <= 5 THEN 0 WHEN ms <= 10 THEN 1 WHEN ms <= 25 THEN 2 WHEN ms <= 50 THEN 3
        WHEN ms <= 100 THEN 4 WHEN ms <= 250 THEN 5 WHEN ms <= 500 THEN 6 WHEN ms <= 1000 THEN 7
        WHEN ms <= 2000 THEN 8 WHEN ms <= 2500 THEN 9 WHEN ms <= 5000 THEN 10 WHEN ms <= 10000 THEN 11
        WHEN ms <= 30000 THEN 12 WHEN ms <= 60000 THEN 13 WHEN ms <= 120000 THEN 14 WHEN ms <= 300000 THEN 15
        WHEN ms <= 600000 THEN 16 WHEN ms <= 1800000 THEN 17 WHEN ms <= 3600000 THEN 18 ELSE 19 END AS b,
    COUNT(*), MIN(ms), MAX(ms)
FROM (SELECT CAST(strftime('%s', done_at) AS INTEGER) / 60 * 60 AS m,
        max(CAST(round((julianday(done_at) - julianday(CASE WHEN failures = 0 THEN next_at ELSE created_at END)) * 86400000) AS INTEGER), 0) AS ms
    FROM release_tasks
    WHERE done_at >= (SELECT strftime('%Y-%m-%d %H:%M:%S', MAX(done_at), '-26 hours') FROM release_tasks
            WHERE done_at IS NOT NULL AND trigger_type <> 'RERUN')
        AND done_at IS NOT NULL AND trigger_type <> 'RERUN')
GROUP BY m, b;
-- Nothing reads the released tasks by done_at any more but the back-fill
-- above; every release no longer pays for the index.
DROP INDEX release_tasks_done;

-- +goose Down
CREATE INDEX release_tasks_done ON release_tasks (done_at, created_at, next_at, failures)
    WHERE done_at IS NOT NULL AND trigger_type <> 'RERUN';
DROP TABLE latency_minutes;
DROP TABLE attempt_minutes;
