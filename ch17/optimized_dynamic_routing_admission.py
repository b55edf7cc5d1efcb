"""Optimized (simulated): load-aware routing plus early rejection of hopeless requests.

A request whose predicted time to first token on the least-loaded replica already exceeds
the TTFT target is rejected at arrival, so the client can retry elsewhere, instead of being
queued, missing its SLO anyway and delaying every request behind it. Serving fewer requests
can raise goodput (requests/s meeting the SLO); the rejected ones are accounted for in the
output (their tokens declined, not lost) and counted in the report.
"""
from __future__ import annotations

from ch17._dynamic_routing_common import AdmissionControl, Router, RoutingBench


class LoadAwareWithAdmission(RoutingBench):

    def router(self) -> Router:
        return AdmissionControl(self.slo)


get_benchmark = LoadAwareWithAdmission

if __name__ == "__main__":
    from core.single import main
    main(LoadAwareWithAdmission)
