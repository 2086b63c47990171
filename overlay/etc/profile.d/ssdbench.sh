# ssdbench shell defaults (sourced by /etc/profile)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8 HOME=/root
export MPLCONFIGDIR=/var/cache/ssdbench/matplotlib
[ -z "$TERM" ] && export TERM=linux
export SSDBENCH_RESULTS=/mnt/ssdresults
PS1='ssdbench:\w# '
