#ifndef STUDYBUS_CPANGOCAIRO_SHIM_H
#define STUDYBUS_CPANGOCAIRO_SHIM_H

// cairo's PDF surface and pango's layout on it (Debian libcairo2-dev, libpango1.0-dev).
#include <cairo.h>
#include <cairo-pdf.h>
#include <pango/pangocairo.h>

// PANGO_SCALE and pango_units_from_double are macros or inline in some versions; one plain
// function gives Swift the conversion from points to pango units.
static inline int studybus_pango_units(double points) {
    return (int)(points * PANGO_SCALE + (points >= 0 ? 0.5 : -0.5));
}

#endif
