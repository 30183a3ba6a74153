-- Subscriptions filtered by type read through this index in committed order, so events of other
-- types cost them nothing however long the journal grows (see eventReadCommitted).
CREATE INDEX events_type_committed ON events (type, tx_id, position);
