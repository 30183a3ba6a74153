-- GET /agent/events lists inbound events newest first (created_at DESC, id DESC), by any of
-- status, conversation, user and source. The brief's indexes serve conversation and user (and
-- status: its failed events are few); these two serve the unfiltered list and a source, which
-- otherwise sort the whole table for one page. Both columns never change, so an event's
-- status moves touch neither.
CREATE INDEX agent_events_received ON agent_events (created_at DESC, id DESC);
CREATE INDEX agent_events_source ON agent_events (source, created_at DESC, id DESC);
