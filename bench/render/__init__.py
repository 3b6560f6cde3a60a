"""Stimulus generation (quadrilaterals, Geoclidean) against matplotlib, and the pixel statistics of our
Geoclidean renders against the official benchmark images."""
