"""The everyday gauges of a project's agents (issue #52, items 4 to 6), read from the rollups.

What a team reads every morning: each agent's traffic, failures, latency, tokens, cost,
loops and open alerts (:mod:`app.agents.summary`), one agent over a range as series
(:mod:`app.agents.series`), two of its versions side by side with a test per measure
(:mod:`app.agents.compare`), and its graph of tools and sub-agents (:mod:`app.agents.graph`).

Everything but the graph's transitions and the example traces is read from the per-bucket
rollups (:mod:`app.rollups`), so a page costs what its buckets cost, not its traces: a
range (:mod:`app.agents.ranges`) is summed in SQL per agent, version, tool or score name
(:mod:`app.agents.read`), and latency quantiles come from the merged sketches. No rollup
holds the order of a trace's steps, so the graph's edges are read from the spans of a
bounded sample of traces spread over the range (:mod:`app.agents.graph_sample`).

The pages (:mod:`app.web.agent_pages`) and the API (``/api/v1/agents``) answer the same
models (:mod:`app.agents.schemas`).
"""
