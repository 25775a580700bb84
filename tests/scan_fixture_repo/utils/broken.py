def unfinished(x:
    return x
# a torch helper left half-written: it can hold a finding, so it is parsed and its error listed
