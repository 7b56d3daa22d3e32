"""Quality labels for QualCode beyond the judge's figures [SynH-Rank §3].

* :mod:`coreb_toolkit.quality.smells`: maintainability as "code smells" counted by a real static
  analyser
  (ruff by default, pylint as a second backend) in place of the paper's SonarQube server.
* :mod:`coreb_toolkit.quality.measure`: speed and memory measured by re-running submissions on
  their public
  tests in the sandbox (medians of repeats), the paper's 2x margin rule, and how often the
  measured preferences agree with the judge's single readings.
"""
