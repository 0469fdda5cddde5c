/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A minimal column printer for the CLI's listings: left-aligned columns
 * sized to their widest cell, an optional header line, "-" for empty cells. */

#include <stdbool.h>
#include <stdio.h>

typedef struct Table Table;

Table *table_new(size_t n_columns, const char * const *headers);
Table *table_free(Table *t);
static inline void table_freep(Table **t) { table_free(*t); }

/* Adds one row of n_columns cells (copied); NULL counts as empty. */
int table_add_row(Table *t, const char * const *cells);
size_t table_n_rows(const Table *t);
int table_print(const Table *t, FILE *f, bool legend);
