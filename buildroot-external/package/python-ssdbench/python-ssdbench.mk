################################################################################
#
# python-ssdbench
#
################################################################################

# The project's own Python package, built from the tui/ directory of this
# repository; its version is the one tui/pyproject.toml declares.
PYTHON_SSDBENCH_SITE = $(BR2_EXTERNAL_SSDBENCH_PATH)/../tui
PYTHON_SSDBENCH_SITE_METHOD = local
PYTHON_SSDBENCH_VERSION = $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' $(PYTHON_SSDBENCH_SITE)/pyproject.toml)
PYTHON_SSDBENCH_SETUP_TYPE = setuptools
# Only tracked sources go into the wheel: setuptools would pick up a stale build/ tree
# (and egg-info) left by a developer's pip install of tui/.
PYTHON_SSDBENCH_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS = \
	--exclude=/build/ --exclude=/dist/ --exclude='*.egg-info' \
	--exclude=__pycache__ --exclude='*.pyc'
PYTHON_SSDBENCH_LICENSE = GPL-2.0+

$(eval $(python-package))
