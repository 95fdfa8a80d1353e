-- After 00090 moved the finished deliveries out, deliveries holds only the
-- live queue, but its indexes keep the size and the depth they had with the
-- history: VACUUM makes the emptied B-tree pages reusable and never shrinks
-- a tree. Measured on a database upgraded with 1,000,000 delivered rows:
-- deliveries_pkey, deliveries_event_webhook_key and deliveries_webhook_idx
-- still 51-68 MB each (one level deeper than the queue needs) around a
-- 1.2 MB table, and the claim still read ~930 buffers; rebuilt, they are
-- 0.1-0.5 MB. The table is as small as the queue, so the rebuild is quick
-- (its lock is held while it runs).

-- +goose Up
REINDEX TABLE deliveries;

-- +goose Down
SELECT 1;
