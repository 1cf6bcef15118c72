"""Traces: each attempt with its signals, hypothesis, ordered steps, outcome and provenance.

The input of dream cycles and of the survival ledger. Steps and outcomes belong to the
**newest attempt with the same action_id and a smaller seq** (the rule the edge projections
use), so a retried action id starts a new trace. One row per attempt event, in seq order:

* ``seq``, ``attempt_id``: the attempt event;
* ``action_id, ts, agent, session, source, task, signals, signal_key, error_signature,
  gene, gene_category, hypothesis_id``: copied from the attempt;
* ``hypothesis``: the newest hypothesis event with that id before the attempt (struct: seq,
  id, text, gene, predicted_status, predicted_score), or NULL;
* ``signal``: the newest signal event with the attempt's key before it (struct: seq, id, ts,
  signals, error_signature, observed), or NULL;
* ``steps``: structs ordered by (index, seq): index, seq, id, ts, tool, action, reasoning,
  result, ok, error, duration_ms; ``step_count``;
* ``outcome``: the newest outcome of the attempt (struct: seq, id, ts, status, score, delta,
  note, key, gene, decided_by, supported_by), or NULL; ``status`` is its status;
  ``open`` is true while there is none; ``outcome_count`` > 1 means it was re-graded;
* ``decided_by``, ``supported_by``: provenance, the attempt's then its outcome's entries,
  without repeats, in order.
"""

from __future__ import annotations

#: The typed views the traces view reads.
TRACE_INPUTS = frozenset({"attempts", "steps", "outcomes", "hypotheses", "signals"})

# Ordered de-duplication; the lambda is slow, so lists without repeats skip it.
_DEDUPE = (
    "CASE WHEN len({c}) < 2 OR len(list_distinct({c})) = len({c}) THEN {c} "
    "ELSE list_filter({c}, lambda x, i: list_position({c}, x) = i) END"
)

_TRACES = """
WITH a AS (
    SELECT seq, id, ts, agent, session, source, action_id, task, signals, key, error_signature,
           gene, gene_category, hypothesis_id, decided_by, supported_by
    FROM attempts WHERE {where}
), s AS (
    SELECT a.seq AS aseq, st.* FROM (SELECT * FROM steps WHERE {where}) st
    ASOF JOIN a ON st.action_id = a.action_id AND st.seq > a.seq
), s_agg AS (
    SELECT aseq, count(*) AS step_count,
        -- structs compare field by field, so sorting them orders by (index, seq); an
        -- ordered aggregate (list(... ORDER BY ...)) is about twice as slow
        list_sort(list({'index': "index", 'seq': seq, 'id': id, 'ts': ts, 'tool': tool,
              'action': "action", 'reasoning': reasoning, 'result': "result", 'ok': ok,
              'error': error, 'duration_ms': duration_ms})) AS steps
    FROM s GROUP BY aseq
), o AS (
    SELECT a.seq AS aseq, oc.* FROM (SELECT * FROM outcomes WHERE {where}) oc
    ASOF JOIN a ON oc.action_id = a.action_id AND oc.seq > a.seq
), o_agg AS (
    SELECT aseq, count(*) AS outcome_count,
        arg_max({'seq': seq, 'id': id, 'ts': ts, 'status': status, 'score': score,
                 'delta': delta, 'note': note, 'key': "key", 'gene': gene,
                 'decided_by': decided_by, 'supported_by': supported_by}, seq) AS outcome
    FROM o GROUP BY aseq
), h AS (
    SELECT a.seq AS aseq,
        {'seq': hy.seq, 'id': hy.id, 'text': hy.text, 'gene': hy.gene,
         'predicted_status': hy.predicted_status,
         'predicted_score': hy.predicted_score} AS hypothesis
    FROM a ASOF JOIN (
        SELECT * FROM hypotheses WHERE hypothesis_id IN (SELECT hypothesis_id FROM a)
    ) hy ON a.hypothesis_id = hy.hypothesis_id AND a.seq > hy.seq
), sig AS (
    SELECT a.seq AS aseq,
        {'seq': sg.seq, 'id': sg.id, 'ts': sg.ts, 'signals': sg.signals,
         'error_signature': sg.error_signature, 'observed': sg.observed} AS signal
    FROM a
    ASOF JOIN (SELECT * FROM signals WHERE "key" IN (SELECT "key" FROM a)) sg
        ON a."key" = sg."key" AND a.seq > sg.seq
    WHERE a."key" <> ''
)
SELECT * REPLACE ({dedupe_decided} AS decided_by, {dedupe_supported} AS supported_by)
FROM (
SELECT a.seq, a.id AS attempt_id, a.action_id, a.ts, a.agent, a.session, a.source, a.task,
    a.signals,
    a."key" AS signal_key, a.error_signature, a.gene, a.gene_category, a.hypothesis_id,
    h.hypothesis, sig.signal,
    coalesce(s_agg.steps, []) AS steps, coalesce(s_agg.step_count, 0) AS step_count,
    o_agg.outcome, o_agg.outcome.status AS status, o_agg.outcome IS NULL AS open,
    coalesce(o_agg.outcome_count, 0) AS outcome_count,
    list_concat(coalesce(a.decided_by, []),
                coalesce(o_agg.outcome.decided_by, [])) AS decided_by,
    list_concat(coalesce(a.supported_by, []),
                coalesce(o_agg.outcome.supported_by, [])) AS supported_by
FROM a
LEFT JOIN s_agg ON s_agg.aseq = a.seq
LEFT JOIN o_agg ON o_agg.aseq = a.seq
LEFT JOIN h ON h.aseq = a.seq
LEFT JOIN sig ON sig.aseq = a.seq
) ORDER BY seq
"""


def traces_sql(after_seq: int = 0, action_ids_param: str | None = None) -> str:
    """The traces query, for attempts after ``after_seq`` (with ``action_ids_param``, a
    SQL parameter like ``$1`` holding a list, only those action ids).

    Both filters are pushed into the attempts, steps and outcomes read: a step or an
    outcome comes after its attempt and shares its action id, and one whose attempt is
    filtered out cannot be claimed by another attempt (that one would be newer than its
    own), so the rows kept are exactly those of the unfiltered view.
    """
    where = [f"seq > {int(after_seq)}"]
    if action_ids_param is not None:
        where.append(f"list_contains({action_ids_param}, action_id)")
    return (
        _TRACES.replace("{where}", " AND ".join(where))
        .replace("{dedupe_decided}", _DEDUPE.format(c="decided_by"))
        .replace("{dedupe_supported}", _DEDUPE.format(c="supported_by"))
    )


#: The unfiltered traces view of the catalog.
TRACES_SQL = traces_sql()
