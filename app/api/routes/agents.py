"""The agents' everyday gauges (issue #52, items 4 to 6): the list, one agent over a range,
two of its versions compared, and its graph. Read from the rollups (:mod:`app.agents`), with
the read role, as the pages show them. An agent's name rides in the path; one with a ``/``
in it is written as it is (``/api/v1/agents/team/bot/graph``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.agents import compare as versions
from app.agents.graph import agent_graph
from app.agents.ranges import DEFAULT_RANGE, RangeName, window
from app.agents.schemas import AgentDetail, AgentGraph, AgentList, VersionComparison
from app.agents.series import agent_detail, agent_exists
from app.agents.summary import agent_list
from app.api.deps import ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/agents", tags=["agents"])
AgentName = Annotated[str, Path(min_length=1, max_length=128)]
Range = Annotated[RangeName, Query(description="24h, 7d or 30d, ending now")]
Version = Annotated[str | None, Query(min_length=1, max_length=64)]


def _known(session: SessionDep, project_id: int, agent: str) -> None:
    found(True if agent_exists(session, project_id=project_id, agent=agent) else None,
          "agent", repr(agent))  # fmt: skip


@router.get("")
def list_agents(principal: ReadKey, session: SessionDep, range: Range = DEFAULT_RANGE) -> AgentList:
    """Every agent with production traffic in the range, busiest first: traces, failure and
    tool error rates, p50/p95 latency, tokens and cost per trace, loop rate, success on its
    main ``true`` objective, open alerts naming it, versions, last seen."""
    return agent_list(session, project_id=principal.project_id, win=window(range, utcnow()))


@router.get("/{agent:path}/compare")
def compare_versions(
    agent: AgentName, principal: ReadKey, session: SessionDep, a: Version = None,
    b: Version = None, range: Range = "7d",
) -> VersionComparison:  # fmt: skip
    """Version ``b`` against ``a`` (default: the newest against the one before, by first
    seen): each measure with its change, its test and its Holm-adjusted p-value, and
    example traces of each."""
    _known(session, principal.project_id, agent)
    with unprocessable(versions.VersionRefused):
        return versions.compare(session, project_id=principal.project_id, agent=agent,
                                win=window(range, utcnow()), a=a, b=b)  # fmt: skip


@router.get("/{agent:path}/graph")
def graph(agent: AgentName, principal: ReadKey, session: SessionDep,
          range: Range = DEFAULT_RANGE) -> AgentGraph:  # fmt: skip
    """Tools, models and sub-agents as nodes, transitions between consecutive steps as edges
    (from a bounded sample of the range's traces: ``sample`` says which)."""
    _known(session, principal.project_id, agent)
    return agent_graph(session, project_id=principal.project_id, agent=agent,
                       win=window(range, utcnow()))  # fmt: skip


@router.get("/{agent:path}")
def get_agent(agent: AgentName, principal: ReadKey, session: SessionDep,
              range: Range = DEFAULT_RANGE) -> AgentDetail:  # fmt: skip
    """The agent over the range: its figures, a point per hour (six hours over 30 days),
    tokens and cost per day, its versions and its open alerts."""
    _known(session, principal.project_id, agent)
    return agent_detail(session, project_id=principal.project_id, agent=agent,
                        win=window(range, utcnow()))  # fmt: skip
