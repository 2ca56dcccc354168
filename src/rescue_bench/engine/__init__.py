"""The inspect_ai adapter: tasks, scorer, judge, the baseline provider and the run driver.

Importing this package imports inspect_ai; the domain core (data, tasks, prompts, parse, metrics,
scoring) never does.
"""
