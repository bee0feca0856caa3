"""The agent pages (issue #52, items 4 to 6): the agents home, an agent over a range, two of
its versions compared, its graph. They read :mod:`app.agents` (the rollups), as
``/api/v1/agents`` does, with the page's read role; a range is a link (24 h, 7 d, 30 d), so
every page reads with JavaScript off.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from app.agents import compare as versions
from app.agents.graph import agent_graph
from app.agents.ranges import DEFAULT_RANGE, RANGES, window
from app.agents.series import agent_detail, agent_exists
from app.agents.summary import agent_list
from app.deps import SessionDep
from app.models.base import utcnow
from app.web import agent_view, graph_svg
from app.web.deps import WebDep

router = APIRouter(include_in_schema=False)
RANGE = "^(" + "|".join(RANGES) + ")$"
RANGE_WORDS = {"24h": "24 hours", "7d": "7 days", "30d": "30 days"}


def _agent(session: Any, pid: int, agent: str) -> None:
    if len(agent) > 128 or not agent_exists(session, project_id=pid, agent=agent):
        raise HTTPException(404, f"agent {agent!r} not found in this project")


def _common(range_: str) -> dict[str, Any]:
    return {"range": range_, "ranges": RANGE_WORDS, "range_words": RANGE_WORDS[range_]}


@router.get("/agents")
def agents_page(web: WebDep, session: SessionDep,
                range: str = Query(DEFAULT_RANGE, pattern=RANGE)) -> Any:  # fmt: skip
    data = agent_list(session, project_id=web.principal.project_id, win=window(range, utcnow()))
    return web.render("agents.html", data=data, traces_href=agent_view.traces_href, **_common(range))


@router.get("/agents/{agent:path}/compare")
def compare_page(
    agent: str, web: WebDep, session: SessionDep, a: str | None = Query(None, max_length=64),
    b: str | None = Query(None, max_length=64), range: str = Query("7d", pattern=RANGE),
) -> Any:  # fmt: skip
    pid = web.principal.project_id
    _agent(session, pid, agent)
    try:
        c = versions.compare(session, project_id=pid, agent=agent, win=window(range, utcnow()),
                             a=a or None, b=b or None)  # fmt: skip
    except versions.VersionRefused as exc:
        if exc.field == "a" and a is None and b is None:  # one version: say so on the page
            return web.render("agent_compare.html", agent=agent, c=None, why=str(exc).split(": ", 1)[1],
                              **_common(range))  # fmt: skip
        raise HTTPException(422, str(exc)) from None
    return web.render("agent_compare.html", agent=agent, c=c, why=None, change=agent_view.change,
                      value=agent_view.value, p_words=agent_view.p_words, **_common(range))  # fmt: skip


@router.get("/agents/{agent:path}/graph")
def graph_page(agent: str, web: WebDep, session: SessionDep,
               range: str = Query(DEFAULT_RANGE, pattern=RANGE)) -> Any:  # fmt: skip
    pid = web.principal.project_id
    _agent(session, pid, agent)
    g = agent_graph(session, project_id=pid, agent=agent, win=window(range, utcnow()))
    href = agent_view.node_href(agent, g.start)
    return web.render("agent_graph.html", agent=agent, g=g, chart=graph_svg.svg(g, href_of=href),
                      href=href, **_common(range))  # fmt: skip


@router.get("/agents/{agent:path}")
def agent_page(agent: str, web: WebDep, session: SessionDep,
               range: str = Query(DEFAULT_RANGE, pattern=RANGE)) -> Any:  # fmt: skip
    pid = web.principal.project_id
    _agent(session, pid, agent)
    d = agent_detail(session, project_id=pid, agent=agent, win=window(range, utcnow()))
    return web.render("agent.html", agent=agent, d=d, charts=agent_view.charts(d),
                      traces=agent_view.traces_href(agent, d.start), **_common(range))  # fmt: skip
