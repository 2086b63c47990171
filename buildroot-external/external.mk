# Files of Python packages on PyPI, as Buildroot's own python-textual package
# spells the address; our packages append the content path of their sdist.
SSDBENCH_PYPI_FILES = $(firstword $(subst /packages/, ,$(PYTHON_TEXTUAL_SITE)))/packages

include $(sort $(wildcard $(BR2_EXTERNAL_SSDBENCH_PATH)/package/*/*.mk))
