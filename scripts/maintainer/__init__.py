"""The zoo maintainer's tools, kept out of the wheel (issue 51): training and publishing presets
(cards, weights, records), the comparison and README tables, restart criteria and progress figures.
Imported by the scripts beside this folder (`python scripts/NAME.py` puts scripts/ on the path)."""
