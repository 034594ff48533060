# Run by `cmake --install` (install(SCRIPT) in CMakeLists.txt): the systemd unit, with ExecStart
# at the egretd being installed (the prefix is the one of this install, --prefix included), and
# the default policy, unless a policy is there already: an operator's policy is never
# overwritten. Both honour DESTDIR.
#
# Set by CMakeLists.txt before this runs: EGRET_SOURCE_DIR, EGRET_SBINDIR and
# EGRET_SYSTEMD_UNIT_DIR (relative to the prefix unless absolute), EGRET_POLICY_DIR (absolute).

function(egret_under_prefix var dir)
	if(IS_ABSOLUTE "${dir}")
		set(${var} "${dir}" PARENT_SCOPE)
	else()
		set(${var} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
	endif()
endfunction()

egret_under_prefix(sbindir "${EGRET_SBINDIR}")
egret_under_prefix(unitdir "${EGRET_SYSTEMD_UNIT_DIR}")
set(EGRETD_PATH "${sbindir}/egretd")
set(unit "$ENV{DESTDIR}${unitdir}/egretd.service")
message(STATUS "Installing: ${unit} (ExecStart=${EGRETD_PATH})")
configure_file("${EGRET_SOURCE_DIR}/deploy/egretd.service.in" "${unit}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${unitdir}/egretd.service")

set(policy "$ENV{DESTDIR}${EGRET_POLICY_DIR}/egret.policy")
if(EXISTS "${policy}")
	message(STATUS "Keeping: ${policy} (a policy is there: not overwritten)")
else()
	# file(INSTALL) adds DESTDIR itself
	file(INSTALL "${EGRET_SOURCE_DIR}/deploy/egret.policy" DESTINATION "${EGRET_POLICY_DIR}"
		PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
