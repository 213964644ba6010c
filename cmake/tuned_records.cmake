# Tuned schedule params (tune/tune.py's records, one JSON object per line).
#
# A record holds one machine's measurements, and params tuned on one microarchitecture can lose to
# the defaults on another (on the Intel Xeon, the AMD EPYC's records made ALiBi attention 1.09x and
# RoPE attention 1.12x slower than the defaults). So a family's libraries can be built with the
# records of one CPU model only: a record's machine up to its first comma.

# The CPU model a cpuinfo file names, as tune/measure.py's cpu_model() reads it: the value of its
# first "model name" (x86), "Model" or "CPU part" (ARM) line; `fallback` (the processor
# architecture, as the tuner records it) where the file is absent or names none.
function(posattn_cpu_model cpuinfo fallback out)
  set(line "")
  if (EXISTS "${cpuinfo}")
    file(STRINGS "${cpuinfo}" line REGEX "^(model name|Model|CPU part)[ \t]*:" LIMIT_COUNT 1)
  endif ()
  if (line STREQUAL "")
    set(${out} "${fallback}" PARENT_SCOPE)
    return ()
  endif ()
  string(REGEX REPLACE "^[^:]*:" "" model "${line}")
  string(STRIP "${model}" model)
  set(${out} "${model}" PARENT_SCOPE)
endfunction ()

# For each kernel of `records` with a summary record (tune.py's "best") measured on `machine`'s
# model (any model if empty) that beat the defaults by more than 3% (this machine's noise), sets
# <prefix><kernel> to "schedule_params=name:value,..." of the one with the lowest time ratio; a
# kernel without one builds with its family's defaults.
function(posattn_read_tuned_records records machine prefix)
  file(STRINGS ${records} lines)
  foreach (record IN LISTS lines)
    string(JSON is_best ERROR_VARIABLE not_summary GET "${record}" best)
    if (not_summary OR NOT is_best)
      continue ()
    endif ()
    string(JSON recorded_on GET "${record}" machine)
    string(REGEX REPLACE ",.*" "" model "${recorded_on}")
    if (NOT "${machine}" STREQUAL "" AND NOT "${model}" STREQUAL "${machine}")
      continue ()
    endif ()
    string(JSON kernel GET "${record}" kernel)
    string(JSON ratio GET "${record}" ratio_to_default)
    if (NOT ratio LESS 0.97 OR (DEFINED best_ratio_${kernel} AND NOT ratio LESS best_ratio_${kernel}))
      continue ()
    endif ()
    string(JSON field_count LENGTH "${record}" params)
    math(EXPR last_field "${field_count} - 1")
    set(text "")
    foreach (f RANGE ${last_field})
      string(JSON name MEMBER "${record}" params ${f})
      string(JSON value GET "${record}" params ${name})
      list(APPEND text "${name}:${value}")
    endforeach ()
    list(JOIN text "," text)
    set(best_ratio_${kernel} ${ratio})
    set(${prefix}${kernel} "schedule_params=${text}" PARENT_SCOPE)
  endforeach ()
endfunction ()
