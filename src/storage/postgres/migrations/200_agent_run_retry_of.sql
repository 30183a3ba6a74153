-- A failed inbound event redriven (POST /agent/events/{id}/redrive) is handled by a new run; the
-- rows of its earlier attempts stay under the old run, which the new one names here.
ALTER TABLE agent_runs ADD COLUMN retry_of TEXT;
