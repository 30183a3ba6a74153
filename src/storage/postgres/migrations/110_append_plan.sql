-- rl_event_append's statement on its generic plan, always. Left to choose, PostgreSQL plans it
-- anew for every call while the calls are small (a custom plan of a 1-event append looks cheaper
-- than the generic one, and planning it costs more than running it): an append of one event took
-- 0.47–0.67 ms, 0.28–0.41 ms on the generic plan, of two 0.58–0.65 → 0.37–0.42 ms; 3 to 30 events
-- within 0.07 ms either way; 20,000 events 535 → 252–261 ms, 50,000 557 → 653 ms.
ALTER FUNCTION rl_event_append(text, text[], bigint[], text[], bigint[], bigint[], text[], bigint[], text[], jsonb, jsonb)
  SET plan_cache_mode = force_generic_plan;
