"""Geoclidean stimuli (Hsu et al. 2022): the program grammar (paper Appendix P) and the 37
concept programs (Appendix O). Import the submodules: ``grammar``, ``concepts``."""
