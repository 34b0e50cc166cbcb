"""The majority and silent-side rules (diff/rules.py) on their own; the parity of the
watcher and the Spark job that both use them is tests/pipeline/test_rule_parity.py."""

from __future__ import annotations

from mqadmin.diff import Finding, Kind
from mqadmin.diff.rules import differing_servers, majority, silent_side


def test_the_largest_group_is_the_majority() -> None:
    assert majority([("x", ["a"]), ("y", ["b", "c"])]) == 1


def test_on_a_tie_the_group_that_has_the_item_wins_then_the_first() -> None:
    assert majority([(None, ["a"]), ("y", ["b"])]) == 1
    assert majority([("x", ["a"]), ("y", ["b"])]) == 0


def test_differing_servers_are_those_outside_the_majority_of_any_finding() -> None:
    f1 = Finding(Kind.PERM, "t", "broker-a", "perm", (("a", "6"), ("b", "6"), ("c", "4")))
    f2 = Finding(Kind.PERM, "t", "broker-b", "perm", (("a", "6"), ("b", None)))
    assert differing_servers([f1, f2]) == ["b", "c"]
    assert differing_servers([]) == []


def test_a_side_is_silent_only_when_none_of_its_servers_answers() -> None:
    groups = [("6", ["a", "b"]), ("4", ["c"])]
    assert silent_side(groups, {"a", "b"}) == ("c",)
    assert silent_side(groups, {"b", "c"}) == ()
    assert silent_side(groups, {"c"}) == ("a", "b")
