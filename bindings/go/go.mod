module github.com/mcpc/mcpc-go

go 1.19
