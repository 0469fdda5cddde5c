/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "table.h"
#include "util.h"

struct Table {
        size_t n_columns;
        char **headers;
        char **cells;      /* n_rows * n_columns, row-major */
        size_t n_rows;
};

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_columns; i++)
                free(t->headers[i]);
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->headers);
        free(t->cells);
        free(t);
        return NULL;
}

static char *cell_dup(const char *s) {
        return strdup(isempty(s) ? "-" : s);
}

Table *table_new(size_t n_columns, const char * const *headers) {
        Table *t;

        if (n_columns == 0 || !headers)
                return NULL;
        t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->headers = calloc(n_columns, sizeof(char *));
        if (!t->headers)
                return table_free(t);
        for (size_t i = 0; i < n_columns; i++) {
                t->headers[i] = strdup(headers[i]);
                if (!t->headers[i])
                        return table_free(t);
        }
        return t;
}

int table_add_row(Table *t, const char * const *cells) {
        char **grown;

        if (!t || !cells)
                return -EINVAL;
        grown = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof(char *));
        if (!grown)
                return -ENOMEM;
        t->cells = grown;
        for (size_t i = 0; i < t->n_columns; i++) {
                char *c = cell_dup(cells[i]);
                if (!c) {
                        for (size_t j = 0; j < i; j++)
                                free(grown[t->n_rows * t->n_columns + j]);
                        return -ENOMEM;
                }
                grown[t->n_rows * t->n_columns + i] = c;
        }
        t->n_rows++;
        return 0;
}

size_t table_n_rows(const Table *t) {
        return t ? t->n_rows : 0;
}

static void print_line(const Table *t, FILE *f, char * const *line, const size_t *widths) {
        for (size_t i = 0; i < t->n_columns; i++) {
                /* No padding after the last column: no trailing blanks in pipes. */
                if (i + 1 == t->n_columns)
                        fprintf(f, "%s\n", line[i]);
                else
                        fprintf(f, "%-*s ", (int) widths[i], line[i]);
        }
}

int table_print(const Table *t, FILE *f, bool legend) {
        _cleanup_free_ size_t *widths = NULL;

        if (!t || !f)
                return -EINVAL;
        widths = calloc(t->n_columns, sizeof(size_t));
        if (!widths)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_columns; i++) {
                widths[i] = legend ? strlen(t->headers[i]) : 0;
                for (size_t row = 0; row < t->n_rows; row++)
                        widths[i] = MAX(widths[i], strlen(t->cells[row * t->n_columns + i]));
        }
        if (legend)
                print_line(t, f, t->headers, widths);
        for (size_t row = 0; row < t->n_rows; row++)
                print_line(t, f, t->cells + row * t->n_columns, widths);
        return ferror(f) ? -EIO : 0;
}
