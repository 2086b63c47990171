################################################################################
#
# python-linkify-it-py
#
################################################################################

PYTHON_LINKIFY_IT_PY_VERSION = 2.2.0
PYTHON_LINKIFY_IT_PY_SOURCE = linkify_it_py-$(PYTHON_LINKIFY_IT_PY_VERSION).tar.gz
PYTHON_LINKIFY_IT_PY_SITE = $(SSDBENCH_PYPI_FILES)/45/98/7a1a5f31fd5c7ba93e963b168e244b8e3dd705b3d2a718e3c3307583bf57
PYTHON_LINKIFY_IT_PY_SETUP_TYPE = setuptools
PYTHON_LINKIFY_IT_PY_LICENSE = MIT
PYTHON_LINKIFY_IT_PY_LICENSE_FILES = LICENSE

$(eval $(python-package))
