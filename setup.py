"""Map the repository's top-level folders onto the ``hostlink`` namespace.

The folders model/, traces/ and validation/ stay at the top of the repository
(the layout the project is organised by) and import as ``hostlink.model``,
``hostlink.traces`` and ``hostlink.validation``. ``hostlink`` itself is an
implicit namespace package.
"""
from setuptools import find_packages, setup

FOLDERS = {"hostlink.model": "model", "hostlink.traces": "traces",
           "hostlink.validation": "validation"}

packages, package_dir = [], {}
for name, folder in FOLDERS.items():
    package_dir[name] = folder
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=package_dir,
      package_data={"hostlink.model": ["data/*.csv", "data/*.json"],
                    "hostlink.traces.graphs": ["data/*.xz", "data/README.md"],
                    "hostlink.validation": ["data/*.json", "effects.toml"]})
