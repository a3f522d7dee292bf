"""Hand-written job_stats samples, one per release format (the project's own, not copies)."""

V2_10_OST = """job_stats:
- job_id:          4242
  snapshot_time:   1700000100
  read_bytes:      { samples:          10, unit: bytes, min:    4096, max: 1048576, sum:         5242880 }
  write_bytes:     { samples:           3, unit: bytes, min:  524288, max:16777216, sum:        17825792 }
  getattr:         { samples:           0, unit:  reqs }
  setattr:         { samples:           1, unit:  reqs }
  punch:           { samples:           0, unit:  reqs }
  sync:            { samples:           2, unit:  reqs }
  destroy:         { samples:           0, unit:  reqs }
  create:          { samples:           0, unit:  reqs }
  statfs:          { samples:           5, unit:  reqs }
  get_info:        { samples:           0, unit:  reqs }
  set_info:        { samples:           0, unit:  reqs }
  quotactl:        { samples:           0, unit:  reqs }
- job_id:          rsync.2001
  snapshot_time:   1700000090
  read_bytes:      { samples:           1, unit: bytes, min:    8192, max:    8192, sum:            8192 }
  write_bytes:     { samples:           0, unit: bytes, min:       0, max:       0, sum:               0 }
  getattr:         { samples:           0, unit:  reqs }
  setattr:         { samples:           0, unit:  reqs }
  punch:           { samples:           0, unit:  reqs }
  sync:            { samples:           0, unit:  reqs }
  destroy:         { samples:           0, unit:  reqs }
  create:          { samples:           0, unit:  reqs }
  statfs:          { samples:           0, unit:  reqs }
  get_info:        { samples:           0, unit:  reqs }
  set_info:        { samples:           0, unit:  reqs }
  quotactl:        { samples:           0, unit:  reqs }
"""

V2_14_MDT = """job_stats:
- job_id:          777:1500:cn001
  snapshot_time:   1700000200
  open:            { samples:          40, unit: usecs, min:       10, max:      90, sum:            1200, sumsq:             50000 }
  close:           { samples:          40, unit: usecs, min:        5, max:      20, sum:             400, sumsq:              5000 }
  mkdir:           { samples:           7, unit: usecs, min:       30, max:      60, sum:             300, sumsq:             14000 }
  read_bytes:      { samples:           0, unit: bytes, min:        0, max:       0, sum:               0, sumsq:                 0 }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:       0, sum:               0, sumsq:                 0 }
  migrate:         { samples:           0, unit: usecs, min:        0, max:       0, sum:               0, sumsq:                 0 }
"""

V2_15_0_OST = """job_stats:
- job_id:          555:1600:cn002
snapshot_time   : 86400.250000000 secs.nsecs
start_time      : 86000.125000000 secs.nsecs
elapsed_time    : 400.125000000 secs.nsecs
  read_bytes:      { samples:           2, unit: bytes, min:     4096, max:     4096, sum:             8192, sumsq:          33554432 }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                 0 }
  read:            { samples:           2, unit: usecs, min:       10, max:       12, sum:               22, sumsq:               244 }
  punch:           { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                 0 }
"""

V2_15_2_OST = """job_stats:
- job_id:          "556\\x3A1600\\x3Acn003"
  snapshot_time:   1700000300.500000000 secs.nsecs
  start_time:      1700000000.250000000 secs.nsecs
  elapsed_time:    300.250000000 secs.nsecs
  read_bytes:      { samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                 0 }
  write_bytes:     { samples:           4, unit: bytes, min:  1048576, max:  1048576, sum:          4194304, sumsq:     4398046511104 }
  write:           { samples:           4, unit: usecs, min:       50, max:      80, sum:              260, sumsq:             17400 }
- job_id:          "tar\\x20x.1601"
  snapshot_time:   1700000301.000000000 secs.nsecs
  start_time:      1700000001.000000000 secs.nsecs
  elapsed_time:    300.000000000 secs.nsecs
  read_bytes:      { samples:           1, unit: bytes, min:      512, max:      512, sum:              512, sumsq:            262144 }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                 0 }
  write:           { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                 0 }
"""

V2_16_LCTL = """obdfilter.home-OST0000.job_stats=job_stats:
obdfilter.home-OST0001.job_stats=
job_stats:
- job_id:          "557:1700:cn004"
  snapshot_time:   1700000400.000000000 secs.nsecs
  start_time:      1700000100.000000000 secs.nsecs
  elapsed_time:    300.000000000 secs.nsecs
  read_bytes:      { samples:           3, unit: bytes, min:     4096, max:  1048576, sum:          1056768, sumsq:   1099545182208, hist: { 4K: 2, 1M: 1 } }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                 0, hist: {  } }
  prealloc:        { samples:           1, unit: usecs, min:        3, max:        3, sum:                3, sumsq:                 9 }
  frobnicate:      { samples:           9, unit:  reqs }
- job_id:
  snapshot_time:   1700000401.000000000 secs.nsecs
  start_time:      1700000101.000000000 secs.nsecs
  elapsed_time:    300.000000000 secs.nsecs
  read_bytes:      { samples:           1, unit: bytes, min:     4096, max:     4096, sum:             4096, sumsq:          16777216, hist: { 4K: 1 } }
  write_bytes:     { samples:           0, unit: bytes, min:        0, max:        0, sum:                0, sumsq:                 0, hist: {  } }
mdt.home-MDT0000.job_stats=
job_stats:
- job_id:          ":1700:cn004"
  snapshot_time:   1700000402.000000000 secs.nsecs
  start_time:      1700000102.000000000 secs.nsecs
  elapsed_time:    300.000000000 secs.nsecs
  open:            { samples:           5, unit: usecs, min:       10, max:       20, sum:               70, sumsq:              1100 }
  parallel_rename_file: { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                 0 }
  rename_trylocks: { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                 0 }
obdfilter.home-OST0002.job_stats=
"""

WRAPPED = """mdt.w-MDT0000.job_stats=
job_stats:
- job_id:          cp.1800
  snapshot_time:   1700000500
  open:            { samples:           3, unit: usecs, min:      185, max:      185, sum:
  555, sumsq:              34225 }
  write_bytes:     { samples:           1, unit: bytes, min:     4096, max:     4096, sum:
   4096, sumsq:           16777216 }
"""
