"""What a model call cost, when the instrumentation did not say.

OpenInference sends a price (``llm.cost.total``, stored as the span's ``cost``); the GenAI
conventions and OpenLLMetry send tokens only. For those calls, downhill:

1. **table** (:mod:`app.pricing.table`): the shipped price table (``prices.json``, dated,
   derived from LiteLLM's list by ``scripts/build_prices.py``) and how a model name finds its
   entry (provider prefixes, dated snapshots and case set aside);
2. **overrides** (:mod:`app.pricing.overrides`): a project's own prices (a private
   deployment, a negotiated rate), which win over the table; ``model_prices`` rows set by
   ``PUT /api/v1/project/model-prices`` and Settings · Model prices;
3. **calls** (:mod:`app.pricing.calls`): one call's cost from its tokens, cached tokens
   included, and the price found; what the derive job writes on the span (``cost`` and
   ``cost_source``: which table version or project price, or why there is none);
4. **coverage** (:mod:`app.pricing.coverage`): the calls left without a cost, per model,
   from the model rollups (what the API and the settings page report).

A cost is computed once, when the derive job first derives the call's trace, with the prices
in force then; a later price change applies to later calls and never rewrites a stored cost.
"""
