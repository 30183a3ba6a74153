-- rl_event_append's statement on its generic plan, always. Left to choose, PostgreSQL plans it
-- anew for every call while the calls are small (a custom plan of a 1-event append looks cheaper
-- than the generic one, and planning it costs more than running it): an append of one event took
-- 0.47–0.67 ms, 0.28–0.41 ms on the generic plan; 5 to 30 events and 20,000 the same either way.
ALTER FUNCTION rl_event_append(text, text[], bigint[], text[], bigint[], bigint[], text[], bigint[], text[], jsonb, jsonb)
  SET plan_cache_mode = force_generic_plan;
