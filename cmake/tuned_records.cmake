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

# The x86 ISA level of a record's target, as schedules/params.h isa_level() names it; empty for
# other targets (ARM, GPU APIs: one level each).
function(posattn_isa_level target out)
  set(level "")
  if (target MATCHES "^x86-64" AND NOT target MATCHES "cuda|opencl|vulkan")
    if (target MATCHES "avx512")
      set(level avx512)
    elseif (target MATCHES "avx2")
      set(level avx2)
    elseif (target MATCHES "sse41")
      set(level sse41)
    else ()
      set(level sse2)
    endif ()
  endif ()
  set(${out} "${level}" PARENT_SCOPE)
endfunction ()

# For each kernel of `records` and each ISA level whose latest summary record (tune.py's "best")
# measured on `machine`'s model (any model if empty) for the kernel's schedule version beat the
# defaults by more than 3% (this machine's noise), sets <prefix><kernel> to
# "schedule_params=isa:<level>,version:<version>,name:value,...", the levels' groups joined by '/'
# (schedules/params.h: each level of a multi-target library takes its own group, and the others
# their defaults); a kernel without one builds with its family's defaults. A record's
# schedule_version is "<algorithm>.<fields>": the algorithm's must be posattn_algorithm_<kernel>
# (kernels.json, set by the caller), the fields' is the generator's to check (the params struct's
# fields and defaults); a record without one, or made for another algorithm, is not built, and the
# configure step names the kernels that have no other. The latest, not the lowest ratio of any
# date: each run measures against the defaults of its day's code, and a later run supersedes an
# earlier one (the AMD EPYC's
# 2026-11-30 8-lane record of learned x + PE, 0.94 then, ran 0.87-0.89x as fast as the defaults
# once x + PE kernels got non-temporal twins, whose 32-byte stores leave lines half written).
function(posattn_read_tuned_records records machine prefix)
  file(STRINGS ${records} lines)
  set(kernels "")
  set(stale "")
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
    string(JSON version ERROR_VARIABLE unversioned GET "${record}" schedule_version)
    string(REGEX REPLACE "[.].*" "" algorithm "${version}")
    if (unversioned OR NOT "${algorithm}" STREQUAL "${posattn_algorithm_${kernel}}")
      list(APPEND stale ${kernel})
      continue ()
    endif ()
    string(JSON target GET "${record}" target)
    posattn_isa_level("${target}" level)
    list(APPEND kernels ${kernel})
    string(JSON ratio GET "${record}" ratio_to_default)
    if (NOT ratio LESS 0.97)
      unset(group_${kernel}_${level})
      continue ()
    endif ()
    string(JSON field_count LENGTH "${record}" params)
    math(EXPR last_field "${field_count} - 1")
    set(text "")
    if (level)
      set(text "isa:${level}")
    endif ()
    list(APPEND text "version:${version}")
    foreach (f RANGE ${last_field})
      string(JSON name MEMBER "${record}" params ${f})
      string(JSON value GET "${record}" params ${name})
      list(APPEND text "${name}:${value}")
    endforeach ()
    list(JOIN text "," group_${kernel}_${level})
  endforeach ()
  list(REMOVE_ITEM stale ${kernels})  # (a kernel with a record of its version is built with that)
  if (stale)
    list(REMOVE_DUPLICATES stale)
    list(JOIN stale ", " stale)
    message(STATUS "posattn: ${records}: records made for another schedule version (or before records had one) "
            "are not built, and these kernels have no other: ${stale} (re-measure them: tune/tune.py --remeasure)")
  endif ()
  list(REMOVE_DUPLICATES kernels)
  foreach (kernel IN LISTS kernels)
    set(groups "")
    foreach (level IN ITEMS "" avx512 avx2 sse41 sse2)
      if (DEFINED group_${kernel}_${level})
        list(APPEND groups "${group_${kernel}_${level}}")
      endif ()
    endforeach ()
    if (groups)
      string(REPLACE ";" "/" groups "${groups}")
      set(${prefix}${kernel} "schedule_params=${groups}" PARENT_SCOPE)
    else ()
      unset(${prefix}${kernel} PARENT_SCOPE)
    endif ()
  endforeach ()
endfunction ()
