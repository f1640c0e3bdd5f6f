"""tau2-bench interop: assessments written as tau2 v1.0.x results files and taubench.com submissions."""

from green_agent.tau2_format.export import TAU2_VERSION, ExportSource, simulation_id, tau2_results

__all__ = ["TAU2_VERSION", "ExportSource", "simulation_id", "tau2_results"]
