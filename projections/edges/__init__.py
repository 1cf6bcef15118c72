"""Edge statistics (signal key x gene): the fold over outcomes, the Laplace-smoothed,
half-life-decayed figures, and their incremental state.

**One rule, two folds.** This package is the authority on the edge rule: which outcomes
count, for which key and gene (:mod:`evolog.projections.edges._state`), and the decayed,
smoothed figures (:mod:`evolog.projections.edges._eval`). Advice folds the same statistics a
second time (:mod:`evolog.advice._edges`, folded by :mod:`evolog.advice._state`), because it
answers on the hook's cold path, where importing DuckDB and pyarrow alone costs more than the
whole answer, and its ``per_event`` sums are what the ``evolog`` policy reads. The two must
not differ: ``tests/projections/test_edge_rule.py`` checks, on random logs (late, repeated and
attempt-less outcomes, equal, out-of-order and far times, sealed and tail events), that
advice's counts and times equal these exactly and its decayed sums (and so ``p``) equal the
``per_event`` ones within 2^-40 of one fresh outcome per outcome: here each term is rounded to
53 bits and summed as integers, exact in any order; advice adds doubles in log order. A change
to the rule is made here first, then in advice, and that test says whether they still agree.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
