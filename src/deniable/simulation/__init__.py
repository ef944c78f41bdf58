"""Seeded simulation: surveys with a known truth for every design (groups, non-compliance),
simulation studies of bias, standard errors and interval coverage, and telemetry devices
whose values follow stated frequencies (:class:`DevicePopulation`: Zipf, uniform, weights),
and a fleet of them whose values change over time (:class:`Fleet`).

May import every layer below it (survey, estimation, designs, randomness, results).
"""

from __future__ import annotations

from deniable.simulation._devices import DevicePopulation
from deniable.simulation._fleet import Fleet, FleetRun
from deniable.simulation._population import (
    TWO_GROUP_OPTIONS,
    TwoGroupSetting,
    group_sizes,
    population_targets,
    realized_parameters,
    two_group_options,
)
from deniable.simulation._simulate import Simulation, simulate
from deniable.simulation._study import SimulationStudy, exact_bounds, simulation_study
from deniable.simulation._study_twogroup import ParameterStudy, TwoGroupSimulationStudy

__all__ = [
    "TWO_GROUP_OPTIONS",
    "DevicePopulation",
    "Fleet",
    "FleetRun",
    "ParameterStudy",
    "Simulation",
    "SimulationStudy",
    "TwoGroupSetting",
    "TwoGroupSimulationStudy",
    "exact_bounds",
    "group_sizes",
    "population_targets",
    "realized_parameters",
    "simulate",
    "simulation_study",
    "two_group_options",
]
