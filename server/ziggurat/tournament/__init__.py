"""Headless tournaments (``ziggurat tournament``), in three parts:

* **pure computation**, no I/O: the configuration (:mod:`.config`), the schedule
  (:mod:`.schedule`, :mod:`.sealed`), ratings and statistics (:mod:`.ratings_openskill`,
  :mod:`.ratings_elo`, :mod:`.ratings_sprt`, :mod:`.results`);
* **running games**: the runner that starts its own server (:mod:`.runner`), plays each game
  (:mod:`.games`, :mod:`.executors`, :mod:`.preflight`), stores results (:mod:`.store`) and
  serves the live page (:mod:`.servicer`), with progress output (:mod:`.progress`);
* **confining programs**: the sandbox (:mod:`.sandbox`), control groups (:mod:`.cgroups`),
  user ids (:mod:`.uids`), cores (:mod:`.cores`) and executable resolution (:mod:`.executables`).
"""
