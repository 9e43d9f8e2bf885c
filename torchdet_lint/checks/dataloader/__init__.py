"""TDL1xx data loading: shuffling without a seeded generator, workers that copy
the dataset's RNG objects, out-of-order loading, unseeded splits and samplers,
`set_epoch`, unsorted file listings, sets of strings put in hash order. One module per rule.

The registry finds the rules in the package's modules; importing the package imports none
of them, so a run imports only the rules its files need.
"""
