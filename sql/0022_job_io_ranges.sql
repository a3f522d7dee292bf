-- writers-from: 20
-- How sure each figure is (docs/attribution.md "How sure a figure is"): per job the least
-- and the most it can have done (read bytes, written bytes, metadata operations) given the
-- `:uid:host` deltas it shared with other jobs of its user, as
-- {"read_bytes": {"least": L, "most": M}, ...}.
--
-- Older writers go on (writers-from above): they do not name the columns, so a row they
-- insert has no range (NULL: shown without one), and their upsert leaves the columns as they
-- were; `ranges_revision` says for which revision the range was computed, and readers use it
-- only when it is the row's revision (a revision by an older writer changed the totals, so
-- the range it left behind is no longer theirs).
ALTER TABLE job_io
    ADD COLUMN ranges           jsonb,     -- NULL: not computed (an older release stored the row)
    ADD COLUMN ranges_revision  integer;   -- the revision `ranges` belongs to
