"""The ledger's rules reproduce darwin-memo 0.7.1's event-driven Ledger, fact by fact.

Every number here comes from docs/reference/ledger.md (§2-6).
"""

from __future__ import annotations

import math

import pytest
from evolog.projections._errors import InvalidParameterError
from evolog.projections.energy._config import DAY_US, LedgerConfig, config_from, parse_cadence
from evolog.projections.energy.rules._rules import LedgerRules
from evolog.projections.energy.rules._state import ALIVE, CAUSES, DEAD


def energy(r: LedgerRules, entry: str) -> float:
    return float(r.state.cols["energy"][r.state.index[entry]])


def alive(r: LedgerRules, entry: str) -> bool:
    return bool(r.state.cols["status"][r.state.index[entry]] == ALIVE)


def col(r: LedgerRules, entry: str, name: str) -> int:
    return int(r.state.cols[name][r.state.index[entry]])


def cause(r: LedgerRules, entry: str) -> str | None:
    return CAUSES[col(r, entry, "cause")]


def test_an_idle_entry_dies_on_its_20th_upkeep_at_tick_19_by_float_error() -> None:
    r = LedgerRules()
    r.birth("idle")
    for _ in range(19):
        r.tick()
    assert alive(r, "idle")
    assert energy(r, "idle") == pytest.approx(0.05)
    r.tick()  # the 20th charge: 1.0 - 20 * 0.05 is -3.19e-16, not 0
    assert not alive(r, "idle")
    assert col(r, "idle", "died_tick") == 19
    assert energy(r, "idle") == pytest.approx(-3.191891195797325e-16, abs=1e-30)
    assert cause(r, "idle") == "starved"


def test_credit_is_gain_times_tanh_and_the_supporter_share() -> None:
    r = LedgerRules()
    r.outcome("a1", 1.0, ["decider"], ["supporter"])
    assert energy(r, "decider") - 1.0 == pytest.approx(0.45696, abs=1e-5)
    assert energy(r, "decider") == 1.0 + 0.6 * math.tanh(1.0)
    assert energy(r, "supporter") == 1.0 + 0.6 * math.tanh(1.0) * 0.25
    assert energy(r, "supporter") - 1.0 == pytest.approx(0.11424, abs=1e-5)
    assert col(r, "decider", "uses") == 1 and col(r, "decider", "last_used") == 0


def test_one_positive_outcome_buys_about_nine_ticks_of_upkeep() -> None:
    r = LedgerRules()
    r.outcome("a1", 1.0, ["e"])
    r.tick(29)  # 1.45696 / 0.05 = 29.1 charges: 20 for the spawn energy, 9 bought
    assert alive(r, "e")
    r.tick(1)
    assert not alive(r, "e")


def test_resource_scale_divides_the_delta() -> None:
    r = LedgerRules({"resource_scale": 100_000.0})
    r.outcome("a1", 50_000.0, ["e"])
    assert energy(r, "e") == 1.0 + 0.6 * math.tanh(0.5)


def test_the_cap_applies_per_credit_so_order_matters() -> None:
    up_first = LedgerRules({"max_energy": 1.2})
    up_first.outcome("a1", 5.0, ["e"])  # 1.0 + 0.59997 -> capped at 1.2
    up_first.outcome("a2", -1.0, ["e"])
    down_first = LedgerRules({"max_energy": 1.2})
    down_first.outcome("a1", -1.0, ["e"])
    down_first.outcome("a2", 5.0, ["e"])
    loss, gain = 0.6 * math.tanh(-1.0), 0.6 * math.tanh(5.0)
    assert energy(up_first, "e") == 1.2 + loss
    assert energy(down_first, "e") == min(1.2, 1.0 + loss + gain)
    assert energy(up_first, "e") < energy(down_first, "e")


def test_there_is_no_floor_and_escrow_pays_upkeep_but_is_not_buried() -> None:
    r = LedgerRules()
    r.attempt("pending", ["held"])
    r.tick(25)
    assert alive(r, "held")
    assert energy(r, "held") == pytest.approx(1.0 - 25 * 0.05)
    assert col(r, "held", "escrow") == 1
    r.outcome("pending", None)  # settles (no measurement): escrow released, burial now
    assert not alive(r, "held")
    assert col(r, "held", "died_tick") == 25
    assert cause(r, "held") == "starved"


def test_a_poisoned_entry_dies_at_the_settle_that_breaks_it() -> None:
    r = LedgerRules()
    r.outcome("a1", -5.0, ["poison"])
    assert alive(r, "poison")
    r.outcome("a2", -5.0, ["poison"])  # 1.0 - 2 * 0.59991 < 0: buried now, not at the tick
    assert not alive(r, "poison")
    assert cause(r, "poison") == "executed"
    assert col(r, "poison", "died_tick") == 0
    before = energy(r, "poison")
    r.outcome("a3", 3.0, ["poison"])  # crediting a corpse does nothing
    assert energy(r, "poison") == before
    assert col(r, "poison", "uses") == 2


def test_another_pending_ticket_protects_from_settle_time_burial() -> None:
    r = LedgerRules()
    r.attempt("t1", ["e"])
    r.outcome("a1", -5.0, ["e"])
    r.outcome("a2", -5.0, ["e"])
    assert alive(r, "e") and energy(r, "e") < 0  # held by t1's escrow
    r.outcome("t1", 3.0)  # credited back above zero, then swept: it lives
    assert alive(r, "e")
    assert energy(r, "e") == 1.0 + 2 * 0.6 * math.tanh(-5.0) + 0.6 * math.tanh(3.0)


def test_death_cause_is_executed_only_after_a_negative_credit() -> None:
    r = LedgerRules()
    r.outcome("a1", -0.1, ["hurt"])
    r.birth("idle")
    r.tick(20)
    assert (cause(r, "hurt"), cause(r, "idle")) == ("executed", "starved")


def test_zero_delta_applies_nothing() -> None:
    r = LedgerRules()
    r.outcome("a1", 0.0, ["e"], ["s"])
    assert col(r, "e", "uses") == 0 and col(r, "e", "last_used") == -1
    assert energy(r, "e") == 1.0
    assert r.state.counters.settled == 1


def test_no_decider_spreads_evenly_and_no_dedup() -> None:
    r = LedgerRules()
    r.outcome("a1", 1.0, [], ["x", "y", "z"])
    c = 0.6 * math.tanh(1.0)
    assert [energy(r, e) for e in "xyz"] == [1.0 + c / 3] * 3
    r.outcome("a2", 1.0, ["both"], ["both"])
    assert energy(r, "both") == 1.0 + c + c * 0.25
    assert col(r, "both", "uses") == 2


def test_several_deciders_share_the_decider_credit() -> None:
    r = LedgerRules()
    r.outcome("a1", 1.0, ["d1", "d2"], ["s"])
    c = 0.6 * math.tanh(1.0)
    assert energy(r, "d1") == energy(r, "d2") == 1.0 + c / 2
    assert energy(r, "s") == 1.0 + c * 0.25


def test_ticket_expiry_at_50_ticks_then_the_late_outcome_is_dropped() -> None:
    r = LedgerRules({"upkeep": 0.0})
    r.attempt("slow", ["e"])
    r.tick(50)
    assert "slow" in r.state.pending
    r.tick()
    assert "slow" not in r.state.pending and r.state.counters.expired == 1
    assert col(r, "e", "escrow") == 0
    assert not r.outcome("slow", 5.0)
    assert energy(r, "e") == 1.0 and r.state.counters.dropped == 1


def test_each_action_settles_once_and_attempts_are_not_reopened() -> None:
    r = LedgerRules()
    assert r.attempt("a1", ["e"])
    assert not r.attempt("a1", ["other"])
    assert r.outcome("a1", 1.0)
    assert not r.outcome("a1", 1.0)
    assert not r.attempt("a1", ["e"])
    assert r.state.counters.dropped == 1 and r.state.counters.ignored_attempts == 2
    assert "other" not in r.state.index or not alive(r, "other")


def test_the_outcome_names_the_entries_or_else_its_attempt_does() -> None:
    r = LedgerRules()
    r.attempt("a1", ["planned"])
    r.outcome("a1", 1.0, ["actual"])
    assert energy(r, "planned") == 1.0 and energy(r, "actual") > 1.0
    assert col(r, "planned", "escrow") == 0


def test_a_gene_decides_when_no_entry_is_named() -> None:
    r = LedgerRules()
    r.outcome("a1", 1.0, gene="gene_x")
    assert energy(r, "gene_x") == 1.0 + 0.6 * math.tanh(1.0)
    off = LedgerRules({"gene_decides": False})
    off.outcome("a1", 1.0, gene="gene_x")
    assert "gene_x" not in off.state.index


def test_probationary_deciders_are_demoted_and_graduate_on_gains() -> None:
    r = LedgerRules()
    r.birth("new", probation=2)
    r.outcome("a1", 1.0, ["new"], ["old"])  # no decider left: even spread, new reduced
    c = 0.6 * math.tanh(1.0)
    assert energy(r, "old") == 1.0 + c / 2
    assert energy(r, "new") == 1.0 + c / 2 * 0.25
    assert col(r, "new", "probation") == 1
    r.outcome("a2", -1.0, ["new"], ["old"])  # a loss does not count towards graduation
    assert col(r, "new", "probation") == 1
    r.outcome("a3", 1.0, ["new"])  # new alone may not answer: withheld, nothing counts
    assert col(r, "new", "probation") == 1 and col(r, "new", "uses") == 2
    r.outcome("a4", 1.0, [], ["new", "old"])
    assert col(r, "new", "probation") == 0


def test_a_juvenile_decider_of_a_loss_is_denied_admission() -> None:
    r = LedgerRules({"admission_window": 2})
    r.outcome("a1", 1.0, ["kid"])
    assert energy(r, "kid") == 1.0 + 0.6 * math.tanh(1.0) * 0.25
    assert col(r, "kid", "juvenile") == 1
    r.outcome("a2", -0.5, ["kid"])
    assert not alive(r, "kid") and cause(r, "kid") == "executed"
    assert energy(r, "kid") == 0.0


def test_pinned_entries_pay_upkeep_are_floored_and_never_die() -> None:
    r = LedgerRules()
    r.birth("pin", pinned=True)
    r.tick(30)
    assert alive(r, "pin") and energy(r, "pin") == 0.0
    r.outcome("a1", -5.0, ["pin"])
    assert alive(r, "pin") and energy(r, "pin") == 0.0
    r.pin("pin", pinned=False)
    r.tick()
    assert not alive(r, "pin") and cause(r, "pin") == "executed"


def test_forget_and_no_resurrection() -> None:
    r = LedgerRules()
    r.birth("e")
    assert r.forget("e")
    assert cause(r, "e") == "forgotten"
    assert not r.birth("e")
    r.outcome("a1", 1.0, ["e"])
    assert not alive(r, "e") and r.state.graveyard == [r.state.index["e"]]


def test_an_explicit_birth_sets_energy_capped_and_pinning() -> None:
    r = LedgerRules()
    r.birth("rich", energy=99.0, pinned=True)
    assert energy(r, "rich") == 5.0 and col(r, "rich", "pinned") == 1


def test_a_merge_pools_energy_capped_with_lineage() -> None:
    r = LedgerRules()
    for k in range(3):
        r.outcome(f"k{k}", 5.0, ["keep"])
        r.outcome(f"g{k}", 5.0, ["gone"])
    assert r.merge("keep", "gone")
    assert energy(r, "keep") == 5.0  # 2 x 2.79993 pooled, capped
    assert cause(r, "gone") == "merged" and energy(r, "gone") == 0.0
    assert r.state.lineage[r.state.index["keep"]] == ["gone"]
    assert r.state.merged_into[r.state.index["gone"]] == "keep"
    assert col(r, "keep", "uses") == 6
    assert not r.merge("keep", "gone")  # the dead do not merge twice


def test_consolidation_every_5_ticks_with_an_injected_similarity() -> None:
    def similar(a: str, b: str) -> float:
        return 1.0 if a[0] == b[0] else 0.0

    r = LedgerRules({"upkeep": 0.1}, similarity=similar)
    for name in ("a1", "a2", "b1"):
        r.birth(name)
    r.outcome("x", 1.0, ["a2"])
    r.tick(4)
    assert alive(r, "a1")
    r.tick()  # tick index 4: the count reaches 5
    assert not alive(r, "a1") and not alive(r, "a2") and alive(r, "b1")
    heir = r.state.merged_into[r.state.index["a1"]]
    assert r.state.lineage[r.state.index[heir]] == ["a2", "a1"]  # the richer is the anchor
    assert energy(r, heir) == energy_sum(upkept(1.0 + 0.6 * math.tanh(1.0)), upkept(1.0))
    assert col(r, heir, "born_tick") == 4


def upkept(e: float, ticks: int = 5, upkeep: float = 0.1) -> float:
    for _ in range(ticks):
        e -= upkeep
    return e


def energy_sum(*values: float) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def test_an_escrowed_entry_is_not_consolidated() -> None:
    r = LedgerRules(similarity=lambda a, b: 1.0)
    r.birth("a")
    r.attempt("t", ["b"])
    r.tick(5)
    assert alive(r, "a") and alive(r, "b")


def test_ticks_of_zero_or_less_do_nothing() -> None:
    r = LedgerRules()
    r.birth("e")
    r.tick(0)
    r.tick(-3)
    assert r.state.tick == 0 and energy(r, "e") == 1.0


def test_config_rejects_bad_values_with_the_field_named() -> None:
    with pytest.raises(InvalidParameterError, match="upkeep"):
        LedgerConfig(upkeep=-0.1)
    with pytest.raises(InvalidParameterError, match="max_energy"):
        config_from({"max_energy": float("inf")})
    with pytest.raises(InvalidParameterError, match="unknown field"):
        config_from({"upkep": 0.1})
    with pytest.raises(InvalidParameterError, match="expected a LedgerConfig"):
        config_from([1])  # type: ignore[arg-type]


def test_cadences_parse() -> None:
    assert parse_cadence("day") == {"tick_every_us": DAY_US}
    assert parse_cadence("outcomes:100") == {"outcomes_per_tick": 100}
    assert parse_cadence("dream") == {"ticks_per_dream": 1}
    assert parse_cadence("explicit") == {}
    for bad in ("outcomes", "weekly", "outcomes:0", "day:2"):
        with pytest.raises(InvalidParameterError, match="cadence"):
            parse_cadence(bad)


def test_dead_entries_keep_their_state_for_the_report() -> None:
    r = LedgerRules()
    r.outcome("a1", -5.0, ["p"])
    r.outcome("a2", -5.0, ["p"])
    i = r.state.index["p"]
    assert r.state.cols["status"][i] == DEAD
    assert r.state.graveyard == [i]


def test_a_huge_tick_fast_forwards_to_the_same_state() -> None:
    def world() -> LedgerRules:
        r = LedgerRules({"upkeep": 0.3})
        r.birth("pin", pinned=True)
        r.attempt("held", ["held"])
        r.outcome("a1", 5.0, ["rich"])
        return r

    stepped, jumped = world(), world()
    for _ in range(500):
        stepped.tick()
    jumped.tick(500)
    for name in ("pin", "held", "rich"):
        for c in stepped.state.cols:
            assert col(stepped, name, c) == col(jumped, name, c) or c == "energy"
        assert energy(stepped, name) == energy(jumped, name)
    assert stepped.state.tick == jumped.state.tick == 500
    jumped.tick(10**15)
    assert jumped.state.tick == 500 + 10**15 and alive(jumped, "pin")
