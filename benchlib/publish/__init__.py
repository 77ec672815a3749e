"""What people read: summary pages, tables, plots and the HTML report."""
