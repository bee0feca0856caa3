"""FM-7 proxy goal convergence: proxies improve while the true objectives degrade.

Goodhart's law in production: an agent tuned on a proxy (thumbs-up, CSAT, tokens saved)
keeps raising it while the outcome it stood for (resolution, correctness) quietly falls,
the proxy stops tracking the outcome, and the outputs collapse onto what the proxy rewards.

:class:`ProxyConvergenceDetector` (``detector``) Holm-combines four sub-tests: the trend
and decoupling of the objectives (``objectives``), paired counterfactual runs
(``counterfactual``) and decision diversity (``diversity``).
"""

from detectors.proxy_convergence.detector import ProxyConvergenceDetector
from detectors.proxy_convergence.diversity import normalised_entropy

__all__ = ["ProxyConvergenceDetector", "normalised_entropy"]
