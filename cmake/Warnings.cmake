# Warnings applied to kiln's own targets (not to third-party code).
function(kiln_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
                         -Werror=return-type -Werror=switch
                         -Wno-maybe-uninitialized -Wno-missing-field-initializers)
endfunction()
