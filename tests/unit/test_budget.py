"""Budgets: `[budget]` as config.toml says it, and the arithmetic of a resume held back (the
session's recorded cost, the day's spend across the registered workspaces' ledgers, each
workspace's own), read from real files."""

from __future__ import annotations

import time

import orjson
import pytest

from sidecar import config
from sidecar.config import ConfigError, load_config
from sidecar.followups import budgethold
from sidecar.followups.budget import Budget, Limits, Spent, session_spent, verdict
from sidecar.layout import Workspace

NOW = time.time()


def today() -> str:
    """This local day, as the code under test reads it when it runs (a constant taken at import
    would be yesterday's for a test that runs after midnight)."""
    return time.strftime("%Y-%m-%d", time.localtime())
PRICED = {"usd": 1.0, "source": "host", "models": ["m"], "unpriced": [], "days": {today(): 1.0}}


def budget_of(config_home, text: str) -> Budget:
    (config_home / "config.toml").write_text(text)
    return load_config().budget


def test_the_budgets_config_toml_sets(config_home, tmp_path):
    budget = budget_of(config_home, '[budget]\nsession = 5\nday = 20.50\n'
                                    '[budget.workspace."~/code/app"]\nday = 2.0\n'
                                    f'[budget.workspace."{tmp_path}"]\nsession = 1\n')
    assert (budget.session, budget.day) == (5.0, 20.5)
    assert budget.workspaces == {"~/code/app": Limits(None, 2.0), str(tmp_path): Limits(1.0, None)}
    assert budget.of(str(tmp_path)) == Limits(1.0, None)
    assert budget.of(str(tmp_path / "other")) == Limits()
    assert not budget_of(config_home, "").any  # none: nothing is held


@pytest.mark.parametrize(("text", "said"), [
    ("[budget]\nsession = -1\n", "budget.session must be an amount of US dollars above 0"),
    ("[budget]\nsession = 0\n", "budget.session must be an amount of US dollars above 0"),
    ('[budget]\nday = "5$"\n', "budget.day must be an amount of US dollars above 0 and up to "
                               "1,000,000, like 5.00, not '5$'"),
    ("[budget]\nday = true\n", "budget.day must be"),
    ("[budget]\nmonth = 100\n", "unknown budget setting 'month'"),
    ("budget = 5\n", "[budget] must be a table"),
    ('[budget.workspace."code/app"]\nday = 2\n', "name the workspace by its absolute path"),
    ('[budget.workspace."/code/app"]\nweek = 2\n', "takes session = USD and/or day = USD"),
    ('[budget.workspace."/code/app"]\nday = -2\n', "budget.workspace.'/code/app'.day must be"),
])
def test_a_bad_budget_is_a_config_error_that_names_the_file_and_the_key(config_home, text, said):
    (config_home / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config()
    assert str(raised.value).startswith(str(config_home / "config.toml"))
    assert said in str(raised.value)


def test_a_session_at_its_budget_is_held_and_the_reason_says_how_much_of_what():
    budget = Budget(session=5.0)
    held = verdict(budget, "/ws", "s1", today(), session_spent({**PRICED, "usd": 5.0}),
                   Spent(0.0), Spent(0.0))
    assert held.hold is not None and held.hold.episode == "session:s1"
    assert held.hold.reason == "over budget ($5.00 of $5.00 this session)"
    under = verdict(budget, "/ws", "s1", today(), session_spent({**PRICED, "usd": 4.99}),
                    Spent(0.0), Spent(0.0))
    assert under.hold is None and under.unknown is None


def test_what_is_not_priced_holds_nothing_and_says_so():
    budget = Budget(session=5.0, day=20.0)
    unpriced = {**PRICED, "usd": 1.0, "unpriced": ["my-local-model"]}
    found = verdict(budget, "/ws", "s1", today(), session_spent(unpriced), Spent(3.0), Spent(3.0))
    assert found.hold is None
    assert found.unknown == "cost unknown: not held (no price for my-local-model)"
    nothing = {"usd": None, "source": "unknown", "why": "agent-sidecar[cost] is not installed"}
    found = verdict(budget, "/ws", "s1", today(), session_spent(nothing), Spent(0.0), Spent(0.0))
    assert (found.hold, found.unknown) == (None, "cost unknown: not held (agent-sidecar[cost] "
                                                 "is not installed)")
    assert session_spent(None) == Spent(0.0, "the session has no cost recorded")
    # What is priced already over the budget holds, whatever is not priced beside it.
    over = verdict(budget, "/ws", "s1", today(), session_spent({**unpriced, "usd": 6.0}),
                   Spent(6.0), Spent(6.0))
    assert over.hold is not None and over.hold.reason == "over budget ($6.00 of $5.00 this session)"


def test_a_workspaces_own_budgets(tmp_path):
    own = {str(tmp_path): Limits(session=1.0, day=2.0)}
    budget = Budget(session=5.0, day=20.0, workspaces=own)
    spent = session_spent({**PRICED, "usd": 1.5})
    held = verdict(budget, str(tmp_path), "s1", today(), spent, Spent(1.5), Spent(1.5)).hold
    assert held is not None and held.reason == "over budget ($1.50 of $1.00 this session)"
    elsewhere = verdict(budget, str(tmp_path / "b"), "s1", today(), spent, Spent(1.5), Spent(1.5))
    assert elsewhere.hold is None  # the global session budget there
    day = verdict(Budget(day=20.0, workspaces={str(tmp_path): Limits(day=2.0)}), str(tmp_path),
                  "s1", today(), spent, Spent(2.5), Spent(2.5)).hold
    assert day is not None and day.episode == f"workspace-day:{today()}"
    assert day.reason == "over budget ($2.50 of $2.00 today in this workspace)"


def ledger(root, days: dict[str, float]) -> Workspace:
    ws = Workspace(root)
    ws.ensure_runtime()
    (ws.runtime / "usage.json").write_bytes(orjson.dumps(
        {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "sessions": 1, "usd": sum(days.values()),
         "days": {day: {"usd": usd, "sessions": 1} for day, usd in days.items()}}))
    return ws


def test_the_day_budget_sums_todays_spend_of_every_registered_workspace(tmp_path, config_home):
    here = ledger(tmp_path / "a", {today(): 8.0, "2000-01-01": 100.0})
    other = ledger(tmp_path / "b", {today(): 12.5})
    ledger(tmp_path / "c", {"2000-01-02": 50.0})  # another day's spend
    for ws in (here, other):
        config.register(ws.root)
    config.register(tmp_path / "c")
    config.register(tmp_path / "gone")  # no ledger: nothing spent there
    assert budgethold.day_spend(here.root, today()) == (20.5, 8.0)
    found = budgethold.check(here, Budget(day=20.0), PRICED, "s1", NOW)
    assert found.hold is not None and found.hold.episode == f"day:{today()}"
    assert found.hold.reason == "over budget ($20.50 of $20.00 today)"
    assert budgethold.check(here, Budget(day=21.0), PRICED, "s1", NOW).hold is None
    # An unreadable ledger is nothing known: it holds nothing.
    (other.runtime / "usage.json").write_text("{not json")
    assert budgethold.day_spend(here.root, today()) == (8.0, 8.0)


def test_doctor_says_the_day_budget_holds_resumes_back(tmp_path, config_home):
    from sidecar.doctor import budget as doctor_budget

    here = ledger(tmp_path / "a", {today(): 8.0})
    config.register(here.root)
    config.register(ledger(tmp_path / "b", {today(): 12.5}).root)
    (config_home / "config.toml").write_text(f'[budget]\nday = 30\n[budget.workspace."{here.root}"]\nday = 5\n')
    said = [(f.ok, f.note, f.what) for f in doctor_budget.check(here)]
    assert said == [(True, True, "this workspace's day budget holds its resume follow-ups back: "
                                 "$8.00 of $5.00 spent today")]
    (config_home / "config.toml").write_text("[budget]\nday = 20\n")
    [found] = doctor_budget.check(here)
    assert found.what == ("the day budget holds resume follow-ups back: $20.50 of $20.00 spent "
                          "today across the registered workspaces")
    assert "config.toml" in found.fix
    (config_home / "config.toml").write_text("[budget]\nday = 21\n")
    [fine] = doctor_budget.check(here)
    assert (fine.ok, fine.note, fine.what) == (True, False, "budgets: $20.50 of $21.00 spent today; "
                                                            "no resume held back")
    (config_home / "config.toml").write_text("")
    assert doctor_budget.check(here) == []


def test_a_workspace_ledger_below_zero_never_lowers_the_day_s_spend(tmp_path, config_home):
    """usage.json lives in a workspace its agent can write: -1e6 there bypasses nothing."""
    day = budgethold.local_day(time.time())
    for name, usd in (("spender", 50.0), ("clone", -1e6)):
        runtime = tmp_path / name / ".context" / "runtime"
        runtime.mkdir(parents=True)
        (runtime / "usage.json").write_bytes(orjson.dumps({"days": {day: {"usd": usd, "sessions": 1}}}))
        config.register(tmp_path / name)
    assert budgethold.day_spend(tmp_path / "spender", day) == (50.0, 50.0)
